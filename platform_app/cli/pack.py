"""Pack a folder into the gzip'd tar the platform takes as an upload source.

What goes in: every regular file and every link that stays inside the folder, except what `.gitignore` files (at
any depth, each for its own folder) and `.svcignore` (at the top) exclude, with git's rules (pathspec's
gitwildmatch). `.git/` and `.svc/` never go in, at any depth. The archive is deterministic (sorted names, owner 0,
gzip without a timestamp), so packing an unchanged folder twice gives the same bytes and the platform stores it
once. Links pointing out of the folder, devices and fifos are refused here, before anything is sent: the platform
would refuse them too (docs/isolation.md).
"""
from __future__ import annotations

import gzip
import os
import stat
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pathspec

from platform_app.cli.client import CliError

NEVER = {".git", ".svc"}
IGNORE_FILES = (".gitignore", ".svcignore")


@dataclass
class Packed:
    file: tempfile.SpooledTemporaryFile
    size: int
    files: int
    names: list[str]


def _spec(path: Path) -> pathspec.PathSpec | None:
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return None
    return pathspec.GitIgnoreSpec.from_lines(lines)


class _Ignores:
    """The ignore rules in force, a stack of (folder relative to the root, spec). The last match wins, as in git
    (a deeper file's `!pattern` re-includes what a shallower one excluded)."""

    def __init__(self):
        self.rules: list[tuple[str, pathspec.PathSpec]] = []

    def ignored(self, rel: str, is_dir: bool) -> bool:
        verdict = False
        for base, spec in self.rules:
            if base and not (rel + "/").startswith(base + "/"):
                continue
            sub = rel[len(base) + 1:] if base else rel
            result = spec.check_file(sub + ("/" if is_dir else ""))
            if result.include is not None:
                verdict = result.include
        return verdict


def walk(root: Path) -> list[tuple[str, Path]]:
    """(archive name, path) of everything to pack, sorted."""
    root = root.resolve()
    ignores = _Ignores()
    top = [(".svcignore", _spec(root / ".svcignore"))]
    found: list[tuple[str, Path]] = []

    def visit(folder: Path, rel: str) -> None:
        pushed = 0
        if (spec := _spec(folder / ".gitignore")) is not None:
            ignores.rules.append((rel, spec))
            pushed += 1
        if not rel and top[0][1] is not None:
            ignores.rules.append(("", top[0][1]))  # .svcignore after the top .gitignore: it has the last word
            pushed += 1
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as exc:
            raise CliError(f"Cannot read {folder}: {exc.strerror}.", code="unreadable") from exc
        for entry in entries:
            name = f"{rel}/{entry.name}" if rel else entry.name
            if entry.name in NEVER and entry.is_dir(follow_symlinks=False):
                continue
            is_dir = entry.is_dir(follow_symlinks=False)
            if ignores.ignored(name, is_dir):
                continue
            if is_dir:
                visit(Path(entry.path), name)
            else:
                found.append((name, Path(entry.path)))
        del ignores.rules[len(ignores.rules) - pushed:]

    visit(root, "")
    return found


def pack(root: Path) -> Packed:
    root = Path(root)
    if not root.is_dir():
        raise CliError(f"{root} is not a folder.", code="not_a_folder", exit_code=2)
    root_real = root.resolve()
    entries = walk(root)
    out = tempfile.SpooledTemporaryFile(max_size=8 << 20)
    names = []
    with gzip.GzipFile(fileobj=out, mode="wb", mtime=0, compresslevel=6) as gz, \
            tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, path in entries:
            st = path.lstat()
            info = tarfile.TarInfo(name)
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            info.mtime = int(st.st_mtime)
            if stat.S_ISLNK(st.st_mode):
                target = os.readlink(path)
                resolved = (path.parent / target).resolve()
                if os.path.isabs(target) or not (resolved == root_real or root_real in resolved.parents):
                    raise CliError(f"{name} is a link out of the folder (to {target}); the platform refuses those.",
                                   code="upload_refused", hint="Copy the file in, or list it in .svcignore.")
                info.type, info.linkname, info.mode = tarfile.SYMTYPE, target, 0o777
                tar.addfile(info)
            elif stat.S_ISREG(st.st_mode):
                info.size = st.st_size
                info.mode = 0o755 if st.st_mode & 0o111 else 0o644  # a hard link goes in as a plain copy
                with open(path, "rb") as f:
                    tar.addfile(info, f)
            else:
                raise CliError(f"{name} is not a regular file or link (a device, fifo or socket).",
                               code="upload_refused", hint="List it in .svcignore.")
            names.append(name)
    size = out.tell()
    out.seek(0)
    return Packed(file=out, size=size, files=len(names), names=names)


def chunks(packed: Packed, size: int = 1 << 16):
    packed.file.seek(0)
    while block := packed.file.read(size):
        yield block
