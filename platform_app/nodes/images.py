"""A node's images: a content-addressed cache of blobs, and one root filesystem per image digest built from them.

`<data>/images/blobs/sha256/<hex>`: layers and configs as the registry sent them, each checked against its digest
before it is kept, shared by every image that has it. `<data>/images/roots/<hex>/`: an image's root filesystem
(`rootfs/`), applied layer by layer with the archive rules (sandbox/archive.py `layer_apply`: whiteouts, no
link out, devices skipped, no set-id bit), and `image.json` (its config, layers, sizes). A second deployment of
the same image finds its root and downloads nothing; another image sharing layers downloads only the others.

The cache holds at most `cache_max_bytes` (IMAGE_CACHE_MAX_BYTES: blobs plus unpacked roots): past it, the least
recently used entries go first, never one an instance of this node runs.
"""
import json
import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

from platform_app.nodes import oci
from platform_app.sandbox.archive import Refused, layer_apply, root_links_check
from platform_app.sandbox.base import ImageRoot
from platform_app.sandbox.files import remove_tree
from platform_app.sandbox.limits import folder_bytes

MAX_FILES = 500_000
MOUNT_POINTS = ("proc", "dev", "tmp")  # made in every root: nothing can be made once it is mounted read-only


class ImageError(Exception):
    """An image this node cannot run: the reason (a registry's answer, a limit, a rule), for the deployment log."""


@dataclass
class Pulled:
    """An image ready to run: its root filesystem, its config, and what the pull did (lines for the log)."""

    digest: str
    root: Path
    config: dict
    lines: list

    def image_root(self, *, cwd_default: str = "/") -> ImageRoot:
        config = self.config.get("config") or {}
        argv = tuple((config.get("Entrypoint") or []) + (config.get("Cmd") or []))
        if not argv:
            raise ImageError("The image's config has neither Entrypoint nor Cmd: nothing to run.")
        uid, gid = user_ids(config.get("User") or "")
        return ImageRoot(root=self.root / "rootfs", argv=argv, uid=uid, gid=gid,
                         cwd=config.get("WorkingDir") or cwd_default)

    def env(self) -> dict:
        """The config's Env as a mapping (later entries win)."""
        pairs = [e.split("=", 1) for e in (self.config.get("config") or {}).get("Env") or [] if "=" in e]
        return {k: v for k, v in pairs}


def user_ids(user: str) -> tuple[int, int]:
    """The config's `User` as (uid, gid): numeric (`1000`, `1000:1000`), or `root`; a name is refused (it would
    be read from the image's /etc/passwd, which this node does not trust)."""
    name, _, group = user.partition(":")
    name = "0" if name in ("", "root") else name
    group = group or name
    group = "0" if group == "root" else group
    if not (name.isdigit() and group.isdigit()) or int(name) > 65535 or int(group) > 65535:
        raise ImageError(f"The image's User {user[:50]!r} is not numeric (uid[:gid]); only numeric users run here.")
    return int(name), int(group)


class ImageCache:
    def __init__(self, folder: Path, *, max_bytes: int):
        self.folder, self.max_bytes = Path(folder), max_bytes
        for sub in ("blobs/sha256", "roots", "tmp"):
            (self.folder / sub).mkdir(parents=True, exist_ok=True)
        for path in (self.folder, self.folder / "roots"):
            path.chmod(0o711)  # the sandbox's user reaches a root through these
        self.in_use: set[str] = set()   # digests of roots that instances run now

    def blob(self, digest: str) -> Path:
        algorithm, _, hexa = digest.partition(":")
        return self.folder / "blobs" / algorithm / hexa

    def root(self, digest: str) -> Path:
        return self.folder / "roots" / digest.partition(":")[2]

    @staticmethod
    def _touch(path: Path) -> None:
        try:
            os.utime(path)
        except OSError:
            pass

    # -- pulling --------------------------------------------------------------------------------------------
    def pull(self, spec: dict, *, check, max_bytes: int, max_layers: int, lines: list | None = None) -> Pulled:
        """The image `spec` names ({"reference", "digest", "username"?, "password"?}) ready to run: its root from
        the cache, or built from cached and downloaded blobs. ImageError names what failed; `lines` gets what
        was done, as it is done."""
        started = time.monotonic()
        lines = [] if lines is None else lines
        digest = oci.digest_check(spec.get("digest", ""))
        root = self.root(digest)
        reference = oci.Reference.parse(spec["reference"])
        described = root / "image.json"
        if described.is_file():
            info = json.loads(described.read_text())
            self._touch(described)
            lines.append(f"Image {reference} at {digest}: its root filesystem is cached on this node.")
            lines += [f"  layer {layer['digest'][:19]} {_size(layer['size'])}: cached" for layer in info["layers"]]
            return Pulled(digest, root, info["config"], lines)
        lines.append(f"Pulling {reference} at {digest}.")
        try:
            with oci.Registry(reference, check=check, username=spec.get("username", ""),
                              password=spec.get("password", "")) as registry:
                manifest_digest, manifest = registry.image_manifest(digest)
                oci.manifest_check(reference, manifest, max_bytes=max_bytes, max_layers=max_layers)
                budget = max_bytes
                config_path = self._fetch(registry, manifest["config"], budget, lines, what="config")
                budget -= manifest["config"]["size"]
                config = json.loads(config_path.read_bytes()[:oci.MANIFEST_MAX_BYTES])
                layers = []
                for layer in manifest["layers"]:
                    self._fetch(registry, layer, budget, lines, what="layer")
                    budget -= layer["size"]
                    layers.append({"digest": layer["digest"], "size": layer["size"]})
        except oci.RegistryError as exc:
            raise ImageError(str(exc))
        except (ValueError, KeyError, TypeError) as exc:
            raise ImageError(f"{reference}: an unreadable manifest or config ({exc.__class__.__name__}).")
        self._build(root, layers, config, lines, max_bytes=max_bytes)
        info = {"reference": str(reference), "digest": digest, "manifestDigest": manifest_digest,
                "layers": layers, "config": config}
        (root / "image.json").write_text(json.dumps(info))
        lines.append(f"Image {digest} ready in {time.monotonic() - started:.2f}s.")
        return Pulled(digest, root, config, lines)

    def _fetch(self, registry: oci.Registry, descriptor: dict, budget: int, lines: list, *, what: str) -> Path:
        digest = oci.digest_check(descriptor.get("digest", ""))
        path = self.blob(digest)
        started = time.monotonic()
        if path.is_file():
            self._touch(path)
            lines.append(f"  {what} {digest[:19]} {_size(path.stat().st_size)}: cached")
            return path
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.folder / "tmp" / f"{digest.partition(':')[2]}-{secrets.token_hex(4)}"
        try:
            with open(partial, "wb") as out:
                size = registry.blob(descriptor, out, limit=budget, what=f"the {what}")
            os.replace(partial, path)
        finally:
            partial.unlink(missing_ok=True)
        lines.append(f"  {what} {digest[:19]} {_size(size)}: fetched in {time.monotonic() - started:.2f}s")
        self.evict(keep={digest})
        return path

    def _build(self, root: Path, layers: list, config: dict, lines: list, *, max_bytes: int) -> None:
        staging = self.folder / "tmp" / f"root-{secrets.token_hex(6)}"
        rootfs = staging / "rootfs"
        rootfs.mkdir(parents=True)
        counted = {"files": 0, "bytes": 0}
        try:
            for layer in layers:
                started = time.monotonic()
                blob = self.blob(layer["digest"])
                skipped = layer_apply(lambda blob=blob: open(blob, "rb"), rootfs, counted, max_bytes=max_bytes,
                                      max_files=MAX_FILES)
                lines.append(f"  layer {layer['digest'][:19]} applied in {time.monotonic() - started:.2f}s")
                lines += [f"    {note}" for note in skipped[:50]]
            lines += [f"  {note}" for note in root_links_check(rootfs)[:50]]
            self._mount_points(rootfs, (config.get("config") or {}).get("WorkingDir") or "/")
        except Refused as exc:
            remove_tree(staging)
            if "unpacked" in exc.reason:
                raise ImageError(f"The image is larger than {max_bytes} bytes unpacked: over IMAGE_MAX_BYTES "
                                 f"({exc.path})")
            raise ImageError(f"The image was refused: {exc}")
        except BaseException:
            remove_tree(staging)
            raise
        staging.chmod(0o755)
        rootfs.chmod(0o755)
        remove_tree(root)
        os.replace(staging, root)
        self.evict(keep={root.name})

    @staticmethod
    def _mount_points(rootfs: Path, workdir: str) -> None:
        """The folders bubblewrap mounts on, and the working folder, made when missing (never through a link)."""
        from platform_app.sandbox.extract import Extractor, Unwritable

        with Extractor(rootfs) as extractor:
            for parts in [(name,) for name in MOUNT_POINTS] + [tuple(p for p in workdir.split("/")
                                                                     if p not in ("", "."))]:
                if parts and ".." not in parts:
                    try:
                        extractor.folder(parts)
                    except Unwritable:
                        raise Refused("/".join(parts), "a mount point or the working folder is not a folder")

    # -- eviction -------------------------------------------------------------------------------------------
    def entries(self) -> list[tuple[float, int, Path, str]]:
        """(last use, bytes, path, key) of every blob and root."""
        found = []
        blobs = self.folder / "blobs" / "sha256"
        for path in blobs.iterdir():
            info = path.stat()
            found.append((info.st_mtime, info.st_size, path, path.name))
        for path in (self.folder / "roots").iterdir():
            described = path / "image.json"
            used = described.stat().st_mtime if described.exists() else 0.0
            found.append((used, folder_bytes([path]), path, path.name))
        return found

    def evict(self, *, keep=()) -> list[str]:
        """Remove the least recently used entries until the cache is within its size; never `keep` nor a root in
        use. The names removed."""
        entries = self.entries()
        total = sum(e[1] for e in entries)
        removed = []
        protected = set(keep) | {d.partition(":")[2] for d in self.in_use.copy()}  # copy: the agent changes it meanwhile | {k.partition(":")[2] for k in keep}
        for used, size, path, key in sorted(entries):
            if total <= self.max_bytes:
                break
            if key in protected:
                continue
            remove_tree(path)
            total -= size
            removed.append(key)
        return removed


def _size(n: int) -> str:
    return f"{n / 1024 / 1024:.1f} MB" if n >= 1024 * 1024 else f"{n / 1024:.1f} kB"
