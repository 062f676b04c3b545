"""The one path the edge works with, and the file a static deployment serves for it.

The edge normalises the request path once (`path_normalize`); the firewall, the preview routes, the runtime
proxy, the ISR cache and the file lookup all use that result, so another spelling of a path (`//admin`,
`/./admin`, `/%2e/admin`, `/%2fadmin`, `/x/../admin`) is the same path everywhere. For a static deployment
`static_target` resolves the file that will be served: its name (`/about.html` for `/about`, `/blog/index.html`
for `/blog/`) is the ISR cache key, and path conditions of the firewall are tried against it and its other names
(`served_names`) too, so a rule on a file holds for every URL that serves it.

The server (WSGI or ASGI) has already percent-decoded the path once; it is not decoded again (a literal `%2e` in
a file name stays a name, it is not a dot).
"""
from dataclasses import dataclass
from pathlib import Path

from config.local_cache import MISSING, LocalCache

# Linux refuses longer names (ENAMETOOLONG): such a path names no file.
MAX_SEGMENT_BYTES = 255


def path_normalize(raw: str) -> str:
    """`//a/./b/../c` → `/a/c`: empty and `.` segments dropped, `..` removes the segment before it (never above
    the root). A trailing slash (or a trailing `.`/`..`, as in URL resolution) is kept: `/docs/` → `/docs/`."""
    parts = raw.split("/")
    segments: list[str] = []
    for part in parts:
        if part in ("", "."):
            continue
        if part == "..":
            if segments:
                segments.pop()
            continue
        segments.append(part)
    path = "/" + "/".join(segments)
    if segments and parts[-1] in ("", ".", ".."):
        path += "/"
    return path


@dataclass(frozen=True)
class Target:
    """The file a static deployment serves for a normalised path, and its name under the artifact root."""

    file: Path
    key: str  # "/" + the file's path inside the artifact: the cache key, and the name firewall rules see


def _resolve(root: Path, path: str) -> Path | None:
    if any(len(segment.encode()) > MAX_SEGMENT_BYTES for segment in path.split("/")):
        return None
    try:
        target = (root / path.lstrip("/")).resolve()
        if not target.is_relative_to(root):  # a link never leads out (the archive rules keep them inside anyway)
            return None
        if target.is_dir():
            target = target / "index.html"
        if not target.is_file() and not target.suffix and target.with_suffix(".html").is_file():
            target = target.with_suffix(".html")  # clean URLs: /about → about.html
        if not target.is_file():
            return None
        target = target.resolve()  # index.html or the .html may be links themselves
    except (OSError, ValueError):  # a name too long for the file system, a loop of links...: no such file
        return None
    return target if target.is_relative_to(root) else None


def static_target(root: Path, path: str) -> Target | None:
    """The file served for the normalised `path` under the artifact folder `root` (resolved): the file itself,
    the folder's `index.html`, or the clean URL's `.html`; None when there is none (the edge's 404)."""
    target = _resolve(root, path)
    if target is None:
        return None
    return Target(target, "/" + target.relative_to(root).as_posix())


# The file a (deployment, normalised path) resolves to, kept per process: resolving costs a few dozen microseconds
# of stat calls on every request, a dict lookup none. Only found files are kept (any path can be asked for, so 404s
# would fill it); an ISR revalidation drops them with the pages (isr.revalidate), the lifetime bounds the rest.
targets = LocalCache("targets", ttl=300, max_entries=50_000, check_setting="EDGE_LOCAL_CHECK_SECONDS")


def static_lookup(key, path: str, root_of) -> tuple[Path | None, Target | None]:
    """(artifact root, `static_target(root, path)`) of the deployment `key` names; `root_of()` gives its resolved
    artifact folder (or None) when this process has not resolved `path` for it yet."""
    hit = targets.get((key, path))
    if hit is not MISSING:
        return hit
    generation = targets.generation
    root = root_of()
    target = static_target(root, path) if root is not None else None
    if target is not None:
        targets.set((key, path), (root, target), generation=generation)
    return root, target


def served_names(key: str) -> tuple[str, ...]:
    """Every URL path that serves the file `key`: `/about.html` → also `/about`; `/blog/index.html` → also
    `/blog/` and `/blog`."""
    names = [key]
    if key.endswith("/index.html"):
        folder = key[: -len("index.html")]
        names += [folder, folder.rstrip("/")] if folder != "/" else [folder]
    elif key.endswith(".html"):
        names.append(key[: -len(".html")])
    return tuple(dict.fromkeys(n for n in names if n))
