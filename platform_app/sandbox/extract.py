"""An archive's members written under a folder by descriptor, and its links judged on what was written.

`Extractor(folder)` opens the folder once. Each member's parent is reached from there component by component
with O_NOFOLLOW|O_DIRECTORY (missing folders made on the way), and the member is made relative to it
(O_CREAT|O_EXCL|O_NOFOLLOW, mkdir, symlink with dir_fd): no path is resolved by the kernel from the root, and no
link is followed, whatever came before, so a member under a link is refused. `links_out()` then resolves every
link on what was written, following links as the kernel would, and names those that lead out of the folder:
a target spelled inside can lead out through other links (`a/..` where `a` is itself a link).
"""
import os
import stat
from pathlib import Path

from platform_app.sandbox.files import DIR_FLAGS

DIR_MODE, MAX_HOPS, CHUNK = 0o755, 40, 1 << 20


class Unwritable(Exception):
    """A member that cannot be written where it says without following a link, or that was written before."""


class Extractor:
    def __init__(self, folder: Path):
        self.root = os.open(folder, DIR_FLAGS)
        self.cached: tuple[tuple, int | None] = ((), None)  # the folder last written to, kept open
        self.links: list[tuple[tuple, str]] = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.cached[1] is not None:
            os.close(self.cached[1])
        os.close(self.root)

    def forget(self) -> None:
        """Drop the folder kept open: something under the root was removed, it may be gone."""
        if self.cached[1] is not None:
            os.close(self.cached[1])
        self.cached = ((), None)

    def folder(self, parts: tuple) -> int:
        """The folder `parts` below the root, made if missing; refused when any component is not a folder."""
        known, known_fd = self.cached
        if known_fd is not None and parts[:len(known)] == known:
            fd, rest = known_fd, parts[len(known):]  # members come folder by folder: most need one step
        else:
            fd, rest = self.root, parts
        for part in rest:
            try:
                os.mkdir(part, DIR_MODE, dir_fd=fd)
            except FileExistsError:
                pass
            try:
                child = os.open(part, DIR_FLAGS, dir_fd=fd)
            except OSError:
                child = None
            if fd not in (self.root, known_fd):
                os.close(fd)
            if child is None:
                raise Unwritable("a path through a link or a file")
            fd = child
        if fd != known_fd:
            if known_fd is not None:
                os.close(known_fd)
            self.cached = (parts, fd) if fd != self.root else ((), None)
        return fd

    def file(self, parts: tuple, data, *, executable: bool) -> None:
        holder = self.folder(parts[:-1])
        try:
            fd = os.open(parts[-1], os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=holder)
        except FileExistsError:
            raise Unwritable("in the archive twice")
        with os.fdopen(fd, "wb") as out:
            while chunk := data.read(CHUNK):
                out.write(chunk)
            os.fchmod(out.fileno(), 0o755 if executable else 0o644)  # never set-id, whatever the archive says

    def link(self, parts: tuple, target: str) -> None:
        holder = self.folder(parts[:-1])
        try:
            os.symlink(target, parts[-1], dir_fd=holder)
        except FileExistsError:
            raise Unwritable("in the archive twice")
        self.links.append((parts, target))

    def links_out(self, *, remove: bool = False) -> list[tuple[str, str]]:
        """(path, target) of the links that lead out of the folder (or loop), resolved on what was written;
        removed with `remove`."""
        out = []
        for parts, target in self.links:
            holder = self.folder(parts[:-1])
            if not self._leads_inside(holder, len(parts) - 1, target):
                out.append(("/".join(parts), target))
                if remove:
                    os.unlink(parts[-1], dir_fd=holder)
        return out

    @staticmethod
    def _leads_inside(holder: int, depth: int, target: str) -> bool:
        """Whether `target`, read from the folder open as `holder` `depth` levels below the root, stays inside.
        Components that do not exist are judged by their spelling (`..` still counts)."""
        fd, todo, hops, written = os.dup(holder), target.split("/")[::-1], 0, True
        try:
            while todo:
                part = todo.pop()
                if part in ("", "."):
                    continue
                if part == "..":
                    if depth == 0:
                        return False
                    depth -= 1
                    if written:
                        fd = _step(fd, "..")
                    continue
                depth += 1
                if not written:
                    continue
                try:
                    info = os.stat(part, dir_fd=fd, follow_symlinks=False)
                except OSError:
                    written = False
                    continue
                if stat.S_ISLNK(info.st_mode):
                    hops, depth = hops + 1, depth - 1
                    link = os.readlink(part, dir_fd=fd)
                    if hops > MAX_HOPS or link.startswith("/"):
                        return False
                    todo.extend(link.split("/")[::-1])
                elif stat.S_ISDIR(info.st_mode):
                    fd = _step(fd, part)
                else:
                    written = False
            return True
        finally:
            os.close(fd)


def _step(fd: int, name: str) -> int:
    child = os.open(name, DIR_FLAGS, dir_fd=fd)
    os.close(fd)
    return child
