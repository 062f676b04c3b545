"""Folder trees a tenant wrote, walked by descriptor: never through a link, without recursion, at any depth.

Each folder is opened relative to the one holding it with O_NOFOLLOW and left by opening its `..`, checked to
be the folder it was entered from. Only one folder is open at a time, so a tree 10,000 folders deep costs
neither Python's stack nor descriptors, and a path longer than PATH_MAX is never handed to the kernel.

- `walk(fd)`: every entry under a folder, sorted, each folder before what it holds (what `pack()` archives).
- `remove_tree(path)`: removes a folder and all it holds (build and instance folders), like
  `shutil.rmtree(path, ignore_errors=True)` without its recursion limit.
"""
import os
import stat

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW


class Moved(OSError):
    """A folder was replaced or moved while it was walked: the walk stops rather than go somewhere else."""


def _identity(fd: int) -> tuple[int, int]:
    info = os.fstat(fd)
    return info.st_dev, info.st_ino


def _listing(fd: int, skip=()) -> list:
    """(name, lstat) of a folder's entries, in reverse order of name (popped from the end)."""
    found = []
    for name in os.listdir(fd):
        if name not in skip:
            try:
                found.append((name, os.stat(name, dir_fd=fd, follow_symlinks=False)))
            except FileNotFoundError:
                continue
    return sorted(found, key=lambda entry: entry[0], reverse=True)


def walk(root: int, *, skip=(), strict: bool = True):
    """The entries under the folder open as `root` (the walk takes the descriptor over and closes it):
    ("entry", fd, name, path, info) for each, `fd` being the open folder that holds it, and after a folder's own
    entries ("left", fd, name, path, info), `fd` then holding that folder. Names in `skip` are left out at the
    top. A folder that cannot be opened raises OSError, or is passed over (no "left") when not `strict`."""
    current = root
    try:
        levels = [("", None, None, None, _listing(root, skip))]  # (prefix, name, info, identity above, to visit)
        while True:
            prefix, _, _, _, pending = levels[-1]
            if pending:
                name, info = pending.pop()
                path = prefix + name
                yield "entry", current, name, path, info
                if not stat.S_ISDIR(info.st_mode):
                    continue
                try:
                    child = os.open(name, DIR_FLAGS, dir_fd=current)
                except OSError:
                    if strict:
                        raise
                    continue
                if _identity(child) != (info.st_dev, info.st_ino):
                    os.close(child)
                    raise Moved(f"{path} was replaced while it was walked")
                above = _identity(current)
                os.close(current)
                current = child
                levels.append((path + "/", name, info, above, _listing(child)))
                continue
            if len(levels) == 1:
                return
            _, name, info, above, _ = levels.pop()
            parent = os.open("..", DIR_FLAGS, dir_fd=current)
            os.close(current)
            current = parent
            if _identity(parent) != above:
                raise Moved(f"{prefix.rstrip('/')} was moved while it was walked")
            yield "left", current, name, prefix.rstrip("/"), info
    finally:
        os.close(current)


def remove_tree(path) -> None:
    """Remove `path` (a folder and all under it, or a file or link itself); no link is followed. What cannot be
    removed (a folder moved meanwhile, one without permission) is left, as `rmtree(ignore_errors=True)` does."""
    head, name = os.path.split(os.path.normpath(os.fspath(path)))
    try:
        holder = os.open(head or ".", os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        try:
            os.unlink(name, dir_fd=holder)
            return
        except IsADirectoryError:
            pass
        except OSError:
            return
        try:
            top = os.open(name, DIR_FLAGS, dir_fd=holder)
        except OSError:
            return
        try:
            for event, fd, entry, _, info in walk(top, strict=False):
                try:
                    if event == "left":
                        os.rmdir(entry, dir_fd=fd)
                    elif not stat.S_ISDIR(info.st_mode):
                        os.unlink(entry, dir_fd=fd)
                except OSError:
                    continue
        except OSError:
            return
        try:
            os.rmdir(name, dir_fd=holder)
        except OSError:
            pass
    finally:
        os.close(holder)
