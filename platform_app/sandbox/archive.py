"""Files out of a sandbox, and into one, as data: gzipped tar archives that never carry a link out.

`pack(base, relative, out)` archives the folder `base/relative` as a sandbox left it. Every component is opened
relative to the one before with O_NOFOLLOW and every entry is read by descriptor (`files.walk`: no recursion,
any depth), so no link, however it was planted, is followed: a symbolic link is kept only when it is relative
and points inside the folder; one pointing out (`/proc/self/environ`, `/`, `../../key.pem`), a hard link
shared with a file outside the folder, a device, a fifo or a socket refuse the whole archive, naming the path
(`Refused`). A fifo is opened without blocking, so it cannot stall the packer. Size and file count are bounded.

`unpack(src, dest)` extracts such an archive with the same rules, whoever made it: what a builder uploads, a
node downloads, the platform serves and a builder gets as source. Members are written by descriptor under a
fresh folder (`extract.py`), never through a link, and every link must still lead inside once all is written;
the folder replaces `dest` only then. Python's `tarfile` only reads the stream: nothing depends on its
extraction filters, which differ between patch releases.
"""
import gzip
import io
import os
import posixpath
import stat
import tarfile
import tempfile
import zlib
from pathlib import Path

from platform_app.sandbox.extract import Extractor, Unwritable
from platform_app.sandbox.files import remove_tree, walk

FILE_MODE, DIR_MODE = 0o644, 0o755


class Refused(Exception):
    """An archive that breaks the rules: `path` inside it, and why."""

    def __init__(self, path: str, reason: str):
        self.path, self.reason = path, reason
        super().__init__(f"{path}: {reason}" if path else reason)


class TooManyFiles(Refused):
    """Refused for its file count alone (`max_files`), which callers name as a limit."""


def _size(n: int) -> str:
    return f"{n / 1024 / 1024:.0f} MB" if n >= 1024 * 1024 else f"{n} bytes"


def link_inside(name: str, target: str) -> bool:
    """Whether a symbolic link at `name` (relative to the folder) pointing at `target` stays inside it."""
    if not target or target.startswith("/") or "\0" in target:
        return False
    resolved = posixpath.normpath(posixpath.join(posixpath.dirname(name), target))
    return resolved != ".." and not resolved.startswith("../") and not resolved.startswith("/")


def _open_folder(base: Path, relative: str) -> int:
    fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY)
    for part in Path(relative).parts:
        if part in ("", "."):
            continue
        if part == ".." or "/" in part:
            os.close(fd)
            raise Refused(relative, "the folder must be inside the workspace")
        try:
            nxt = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
        except OSError:
            os.close(fd)
            raise Refused(relative, "not a folder the build produced (a missing folder, a file or a link)")
        os.close(fd)
        fd = nxt
    return fd


def pack(base: Path, relative: str, out, *, max_bytes: int, max_files: int, skip=(".git",)) -> dict:
    """Write `base/relative` as a tar.gz to the binary file `out`; {"files", "bytes"}. Refused on a rule."""
    root = _open_folder(Path(base), relative or ".")
    counted = {"files": 0, "bytes": 0}
    hard_links: dict[tuple, list] = {}   # (dev, inode) -> [nlink, paths seen]
    with tarfile.open(fileobj=out, mode="w:gz", compresslevel=6, format=tarfile.PAX_FORMAT) as tar:
        path = relative
        try:
            for event, fd, name, path, info in walk(root, skip=set(skip)):
                if event == "entry":
                    _pack_entry(tar, fd, name, path, info, counted, hard_links, max_bytes, max_files)
        except OSError as exc:  # a folder without permission, or one moved while it was read
            raise Refused(path, f"could not be read ({exc.strerror or exc.__class__.__name__})")
        for (nlink, paths) in hard_links.values():
            if len(paths) < nlink:
                raise Refused(paths[0], "a hard link to a file outside the output")
    return counted


def _pack_entry(tar, fd, name, path, info, counted, hard_links, max_bytes, max_files) -> None:
    counted["files"] += 1
    if counted["files"] > max_files:
        raise TooManyFiles(path, f"more than {max_files} files")
    entry = tarfile.TarInfo(path)
    entry.mtime, entry.uid, entry.gid, entry.uname, entry.gname = int(info.st_mtime), 0, 0, "", ""
    if stat.S_ISLNK(info.st_mode):
        target = os.readlink(name, dir_fd=fd)
        if not link_inside(path, target):
            raise Refused(path, f"a link to {target[:200]}, outside the output")
        entry.type, entry.linkname, entry.mode = tarfile.SYMTYPE, target, 0o777
        tar.addfile(entry)
    elif stat.S_ISDIR(info.st_mode):
        entry.type, entry.mode = tarfile.DIRTYPE, DIR_MODE
        tar.addfile(entry)  # the walk goes in next
    elif stat.S_ISREG(info.st_mode):
        file_fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=fd)
        with os.fdopen(file_fd, "rb") as handle:
            opened = os.fstat(handle.fileno())
            if not stat.S_ISREG(opened.st_mode) or opened.st_ino != info.st_ino:
                raise Refused(path, "changed while it was read")
            if opened.st_nlink > 1:
                seen = hard_links.setdefault((opened.st_dev, opened.st_ino), [opened.st_nlink, []])
                seen[1].append(path)
            counted["bytes"] += opened.st_size
            if counted["bytes"] > max_bytes:
                raise Refused(path, f"the output is larger than {_size(max_bytes)}")
            entry.size, entry.mode = opened.st_size, 0o755 if opened.st_mode & 0o100 else FILE_MODE
            tar.addfile(entry, _Exactly(handle, opened.st_size))
    else:
        kind = "a fifo" if stat.S_ISFIFO(info.st_mode) else "a socket" if stat.S_ISSOCK(info.st_mode) else "a device"
        raise Refused(path, f"{kind}, not a file")


class _Exactly(io.RawIOBase):
    """`size` bytes of a file that might change under us: padded or cut to what the header promised."""

    def __init__(self, handle, size: int):
        self.handle, self.left = handle, size

    def readable(self):
        return True

    def readinto(self, buffer) -> int:
        want = min(len(buffer), self.left)
        if want <= 0:
            return 0
        chunk = self.handle.read(want) or b"\0" * want
        buffer[:len(chunk)] = chunk
        self.left -= len(chunk)
        return len(chunk)

    def read(self, size=-1):
        size = self.left if size is None or size < 0 else size
        data = bytearray(min(size, self.left))
        n = self.readinto(data)
        return bytes(data[:n])


def _check(member: tarfile.TarInfo, counted: dict, max_bytes: int, max_files: int) -> None:
    name = member.name
    parts = name.split("/")
    if (not name or name.startswith("/") or "\0" in name or len(name) > 4096 or ".." in parts
            or any(len(p.encode()) > 255 for p in parts)):
        raise Refused(name[:200], "not a plain relative path")
    counted["files"] += 1
    if counted["files"] > max_files:
        raise TooManyFiles(name, f"more than {max_files} files")
    if member.issym():
        if not link_inside(name, member.linkname):
            raise Refused(name, f"a link to {member.linkname[:200]}, outside the archive")
    elif member.isfile():
        counted["bytes"] += member.size
        if counted["bytes"] > max_bytes:
            raise Refused(name, f"larger than {_size(max_bytes)} in all")
    elif not member.isdir():
        raise Refused(name, "a hard link, device or fifo, not a file")


def unpack(src, dest: Path, *, max_bytes: int, max_files: int, skip_bad_links: bool = False) -> list[str]:
    """Extract the tar.gz read from `src` into `dest` (replaced whole); the paths of links it skipped (with
    `skip_bad_links`: a repository's links out of it are dropped, not refused). Refused on any other rule."""
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{dest.name}-", dir=dest.parent))
    counted, skipped = {"files": 0, "bytes": 0}, []
    try:
        with Extractor(staging) as extractor, tarfile.open(fileobj=src, mode="r|gz") as tar:
            for member in tar:
                try:
                    _check(member, counted, max_bytes, max_files)
                except Refused as exc:
                    if skip_bad_links and member.issym() and exc.path == member.name:
                        skipped.append(member.name)
                        continue
                    raise
                _write(extractor, tar, member)
            out = extractor.links_out(remove=skip_bad_links)
            if out and not skip_bad_links:
                path, target = out[0]
                raise Refused(path, f"a link to {target[:200]}, which leads outside the archive through links")
            skipped += [path for path, _ in out]
        staging.chmod(DIR_MODE)
        remove_tree(dest)
        os.replace(staging, dest)
    except (tarfile.TarError, EOFError, OSError, ValueError) as exc:
        remove_tree(staging)
        raise Refused("", f"not a readable tar.gz archive ({exc.__class__.__name__})")
    except BaseException:
        remove_tree(staging)
        raise
    return skipped


def _write(extractor: Extractor, tar, member: tarfile.TarInfo) -> None:
    parts = tuple(p for p in member.name.split("/") if p not in ("", "."))
    try:
        if not parts:
            return
        if member.isdir():
            extractor.folder(parts)
        elif member.issym():
            extractor.link(parts, member.linkname)
        else:
            extractor.file(parts, tar.extractfile(member), executable=bool(member.mode & 0o100))
    except Unwritable as exc:
        raise Refused(member.name, str(exc))
    except OSError as exc:
        raise Refused(member.name, f"cannot be extracted ({exc.strerror or exc.__class__.__name__})")


# Image layers ---------------------------------------------------------------------------------------------------
# An OCI image's layers are archives of the same kind applied one over the other into a root filesystem, with the
# same rules: written by descriptor, never through a link, no set-id bit, bounded. What differs is what a layer
# may hold: hard links (to what an earlier member or layer wrote), devices and fifos (skipped), whiteouts
# (`.wh.<name>` removes `<name>` of the layers below, `.wh..wh..opq` empties its folder of them), members that
# replace what a lower layer wrote, and absolute links: they are meant from the image's own root, so they are
# written relative to it (`/etc/shadow` at `a/b` becomes `../etc/shadow`) and reach the same file inside the
# sandbox, never the node's. A link that still leads out of the root is removed and named.

WHITEOUT, OPAQUE = ".wh.", ".wh..wh..opq"


def _layer_parts(name: str) -> tuple:
    """A member's path as components below the root; Refused when it is not a plain path."""
    parts = tuple(p for p in name.split("/") if p not in ("", "."))
    if "\0" in name or len(name) > 4096 or ".." in parts or any(len(p.encode()) > 255 for p in parts):
        raise Refused(name[:200], "not a plain relative path")
    return parts


def _rooted(parts: tuple, target: str) -> str:
    """A link target as the image means it: an absolute one relative to the root from where the link is."""
    if not target.startswith("/"):
        return target
    inside = posixpath.normpath(target).lstrip("/")
    return "/".join([".."] * (len(parts) - 1) + ([inside] if inside else [])) or "."


def _existing_folder(root: int, parts: tuple) -> int | None:
    """The folder `parts` below the open root, without making or following anything; None when it is not one."""
    fd = os.dup(root)
    for part in parts:
        try:
            child = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
        except OSError:
            os.close(fd)
            return None
        os.close(fd)
        fd = child
    return fd


def _remove_entry(holder: int, name: str) -> None:
    """Remove `name` in the open folder `holder` (a file, a link, or a folder with all it holds)."""
    if name in ("", ".", "..") or "/" in name:
        return
    try:
        os.unlink(name, dir_fd=holder)
    except IsADirectoryError:
        remove_tree(f"/proc/self/fd/{holder}/{name}")  # the descriptor's own folder: remove_tree follows no link
    except FileNotFoundError:
        pass


def layer_whiteouts(src) -> list[tuple[tuple, str | None]]:
    """The whiteouts of a layer (read from `src`, a tar, plain or compressed): (folder parts, name), name None
    for an opaque folder."""
    found = []
    with tarfile.open(fileobj=src, mode="r|*") as tar:
        for member in tar:
            parts = _layer_parts(member.name)
            if parts and parts[-1] == OPAQUE:
                found.append((parts[:-1], None))
            elif parts and parts[-1].startswith(WHITEOUT):
                found.append((parts[:-1], parts[-1][len(WHITEOUT):]))
    return found


def layer_apply(open_src, root: Path, counted: dict, *, max_bytes: int, max_files: int) -> list[str]:
    """Apply the layer `open_src()` opens (a binary stream of a tar, plain or gzip) over the root filesystem
    `root`: its whiteouts first (on the layers below only), then its members. `counted` ({"files", "bytes"}) is
    shared by all the layers of an image, so the bounds are the image's. Answers what was skipped, as lines;
    Refused on a rule (the root is then half written: the caller removes it)."""
    skipped = []
    try:
        with open_src() as src:
            whiteouts = layer_whiteouts(src)
        with Extractor(root) as extractor:
            for folder, name in whiteouts:
                holder = _existing_folder(extractor.root, folder)
                if holder is None:
                    continue
                try:
                    for entry in ([name] if name is not None else os.listdir(holder)):
                        _remove_entry(holder, entry)
                finally:
                    os.close(holder)
            extractor.forget()
            with open_src() as src, tarfile.open(fileobj=src, mode="r|*") as tar:
                for member in tar:
                    note = _layer_member(extractor, tar, member, counted, max_bytes, max_files)
                    if note:
                        skipped.append(note)
    except (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile, ValueError) as exc:
        raise Refused("", f"not a readable layer ({exc.__class__.__name__})")
    return skipped


def _layer_member(extractor: Extractor, tar, member: tarfile.TarInfo, counted, max_bytes, max_files) -> str:
    parts = _layer_parts(member.name)
    if not parts or parts[-1].startswith(WHITEOUT):
        return ""
    counted["files"] += 1
    if counted["files"] > max_files:
        raise TooManyFiles(member.name, f"more than {max_files} files")
    if member.ischr() or member.isblk() or member.isfifo():
        return f"{member.name}: a device or fifo, skipped"
    if member.isfile():
        counted["bytes"] += member.size
        if counted["bytes"] > max_bytes:
            raise Refused(member.name, f"larger than {_size(max_bytes)} unpacked")
    try:
        holder = extractor.folder(parts[:-1])
        try:
            info = os.stat(parts[-1], dir_fd=holder, follow_symlinks=False)
        except FileNotFoundError:
            info = None
        if info is not None and not (member.isdir() and stat.S_ISDIR(info.st_mode)):
            _remove_entry(holder, parts[-1])  # a member replaces what the layers below wrote there
            extractor.forget()
        if member.isdir():
            extractor.folder(parts)
        elif member.issym():
            extractor.link(parts, _rooted(parts, member.linkname))
        elif member.islnk():
            source = _layer_parts(member.linkname.lstrip("/"))
            holder = extractor.folder(parts[:-1])
            source_holder = _existing_folder(extractor.root, source[:-1]) if source else None
            if source_holder is None:
                return f"{member.name}: a hard link to {member.linkname[:200]}, which is not in the image; skipped"
            try:
                os.link(source[-1], parts[-1], src_dir_fd=source_holder, dst_dir_fd=holder, follow_symlinks=False)
            except OSError as exc:
                return f"{member.name}: a hard link to {member.linkname[:200]} ({exc.strerror}); skipped"
            finally:
                os.close(source_holder)
        elif member.isfile():
            extractor.file(parts, tar.extractfile(member), executable=bool(member.mode & 0o111))
        else:
            return f"{member.name}: not a file, folder or link; skipped"
    except Unwritable as exc:
        raise Refused(member.name, str(exc))
    except OSError as exc:
        raise Refused(member.name, f"cannot be extracted ({exc.strerror or exc.__class__.__name__})")
    return ""


def root_links_check(root: Path) -> list[str]:
    """Every link of a root filesystem resolved on what was written: those that lead out of it (through other
    links too) are removed and named."""
    removed = []
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    for event, holder, name, path, info in walk(fd):
        if event == "entry" and stat.S_ISLNK(info.st_mode):
            target = os.readlink(name, dir_fd=holder)
            if target.startswith("/") or not Extractor._leads_inside(holder, path.count("/"), target):
                os.unlink(name, dir_fd=holder)
                removed.append(f"{path}: a link to {target[:200]}, outside the image; removed")
    return removed
