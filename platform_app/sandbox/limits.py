"""Limits on a sandbox's processes: cgroups where the node lets us make them, rlimits where it does not, and a
watch on the folders it writes.

- memory, processes, CPU time and CPU share: a cgroup of its own (the unified hierarchy, or the v1 controllers
  `memory`, `pids`, `cpu`, `cpuacct`), created under SANDBOX_CGROUP_PARENT; where none can be created (a
  laptop without root), `RLIMIT_DATA` for memory, `RLIMIT_NPROC` for processes and `RLIMIT_CPU` per process;
- disk: `RLIMIT_FSIZE` caps one file; every few seconds the writable folders are walked by descriptor (no path
  length or depth escapes it) and the deleted files its processes keep open are added (a kill once over);
- the wall clock is the caller's (a build's deadline).

`exceeded()` names the first limit broken: `memory` (the cgroup's OOM killer fired), `processes` (a fork was
refused at the limit), `cpu`, `disk`. The node reports `enforced()`: which limit was kept, and how.
"""
import os
import resource
import signal
import stat
import time
from pathlib import Path

from platform_app.sandbox.base import Limits

CGROUP_ROOT = Path("/sys/fs/cgroup")
V1_CONTROLLERS = ("memory", "pids", "cpu", "cpuacct")
CPU_PERIOD_US = 100_000


def _write(path: Path, value) -> bool:
    try:
        path.write_text(str(value))
        return True
    except OSError:
        return False


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _field(text: str, name: str) -> int:
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        if key == name and value.strip().isdigit():
            return int(value)
    return 0


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _listing(fd: int) -> tuple[int, list]:
    """Bytes of the entries of the open folder `fd`, and its sub-folders as (name, device, inode)."""
    total, folders = 0, []
    with os.scandir(fd) as entries:
        for entry in entries:
            try:
                info = entry.stat(follow_symlinks=False)  # fstatat(fd, name): no path, so no PATH_MAX
            except OSError:
                continue
            total += info.st_blocks * 512
            if stat.S_ISDIR(info.st_mode):
                folders.append((entry.name, info.st_dev, info.st_ino))
    return total, folders


def tree_bytes(root) -> int:
    """Bytes allocated under the folder `root`, walked by descriptor: each folder is opened from its parent's
    descriptor (`O_NOFOLLOW`), so neither path length nor depth limits the walk, and one descriptor is open at a
    time (the way back up is `..`, checked to be the folder it left). Links are never followed."""
    try:
        fd = os.open(root, _DIR_FLAGS)
    except OSError:
        return 0
    try:
        info = os.fstat(fd)
        path = [(info.st_dev, info.st_ino)]   # the folders from root down to the current one
        total, folders = _listing(fd)
        pending = [folders]                  # per level: sub-folders still to visit
        while pending:
            if pending[-1]:
                name, dev, ino = pending[-1].pop()
                try:
                    child = os.open(name, _DIR_FLAGS, dir_fd=fd)
                except OSError:
                    continue
                info = os.fstat(child)
                if (info.st_dev, info.st_ino) != (dev, ino):  # replaced since it was listed
                    os.close(child)
                    continue
                os.close(fd)
                fd = child
                path.append((dev, ino))
                try:
                    size, folders = _listing(fd)
                except OSError:
                    size, folders = 0, []
                total += size
                pending.append(folders)
                continue
            pending.pop()
            path.pop()
            if not pending:
                break
            parent = os.open("..", _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = parent
            info = os.fstat(fd)
            if (info.st_dev, info.st_ino) != path[-1]:  # the tree was moved while walked: what was counted
                break
        return total
    finally:
        os.close(fd)


def folder_bytes(paths) -> int:
    """Bytes allocated on disk under `paths`, links never followed."""
    return sum(tree_bytes(path) for path in paths)


def _children(roots) -> list[int]:
    """`roots` and every process descending from them (from /proc)."""
    parents: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            text = Path(f"/proc/{name}/stat").read_text()
        except OSError:
            continue
        ppid = int(text.rpartition(")")[2].split()[1])
        parents.setdefault(ppid, []).append(int(name))
    found, stack = [], list(roots)
    while stack:
        pid = stack.pop()
        found.append(pid)
        stack.extend(parents.get(pid, ()))
    return found


def open_deleted_bytes(pids, devices) -> int:
    """Bytes of files on `devices` that processes `pids` keep open after they were deleted (no path reaches
    them, but they hold their blocks until closed)."""
    total, seen = 0, set()
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            link = f"/proc/{pid}/fd/{fd}"
            try:
                if not os.readlink(link).endswith(" (deleted)"):
                    continue
                info = os.stat(link)
            except OSError:
                continue
            key = (info.st_dev, info.st_ino)
            if stat.S_ISREG(info.st_mode) and info.st_dev in devices and info.st_nlink == 0 and key not in seen:
                seen.add(key)
                total += info.st_blocks * 512
    return total


class Enforcer:
    """The limits of one sandbox. `join(pids)` moves processes in before the command runs (their children
    follow); `exceeded()`, `usage()`, `kill_all()`, `remove()` as the names say."""

    def __init__(self, limits: Limits, *, name: str, parent: str = "platform-sandbox", watch=()):
        self.limits, self.watch = limits, [Path(p) for p in watch]
        self.groups: dict[str, Path] = {}   # controller -> cgroup folder ("unified" for v2)
        self.kind = ""                      # "cgroup v2" | "cgroup v1" | ""
        self._disk_checked, self._disk_every, self._disk_over = 0.0, 2.0, False
        self._joined: list[int] = []
        self._make(name, parent)

    # -- set-up -------------------------------------------------------------------------------------------
    def _make(self, name: str, parent: str) -> None:
        if (CGROUP_ROOT / "cgroup.controllers").is_file():
            self._make_v2(name, parent)
        else:
            self._make_v1(name, parent)

    def _make_v2(self, name: str, parent: str) -> None:
        base = CGROUP_ROOT / parent
        try:
            base.mkdir(exist_ok=True)
        except OSError:
            return
        wanted = [c for c in ("memory", "pids", "cpu") if c in _read(CGROUP_ROOT / "cgroup.controllers").split()]
        for folder in (CGROUP_ROOT, base):
            _write(folder / "cgroup.subtree_control", " ".join(f"+{c}" for c in wanted))
        group = base / name
        try:
            group.mkdir()
        except OSError:
            return
        self.groups["unified"], self.kind = group, "cgroup v2"
        lim = self.limits
        if lim.memory_mb:
            _write(group / "memory.max", lim.memory_mb * 1024 * 1024)
            _write(group / "memory.swap.max", 0)
        if lim.processes:
            _write(group / "pids.max", lim.processes)
        if lim.cpu_share:
            _write(group / "cpu.max", f"{int(lim.cpu_share * CPU_PERIOD_US)} {CPU_PERIOD_US}")

    def _make_v1(self, name: str, parent: str) -> None:
        made: dict[Path, Path] = {}  # a hierarchy's mount -> our cgroup in it (cpu and cpuacct may share one)
        for controller in V1_CONTROLLERS:
            mount = CGROUP_ROOT / controller
            if not (mount / "cgroup.procs").is_file():
                continue
            if mount.resolve() not in made:
                group = mount / parent / name
                try:
                    group.mkdir(parents=True)
                except OSError:
                    continue
                made[mount.resolve()] = group
            self.groups[controller] = made[mount.resolve()]
        if not self.groups:
            return
        self.kind = "cgroup v1"
        lim = self.limits
        memory = self._group("memory")
        if memory and lim.memory_mb:
            _write(memory / "memory.limit_in_bytes", lim.memory_mb * 1024 * 1024)
            _write(memory / "memory.memsw.limit_in_bytes", lim.memory_mb * 1024 * 1024)  # no escape to swap
        pids = self._group("pids")
        if pids and lim.processes:
            _write(pids / "pids.max", lim.processes)
        cpu = self._group("cpu")
        if cpu and lim.cpu_share:
            _write(cpu / "cpu.cfs_period_us", CPU_PERIOD_US)
            _write(cpu / "cpu.cfs_quota_us", int(lim.cpu_share * CPU_PERIOD_US))

    def _group(self, controller: str) -> Path | None:
        """The cgroup folder holding `controller`'s files."""
        return self.groups.get("unified") or self.groups.get(controller)

    def _has(self, controller: str, probe: str) -> bool:
        group = self._group(controller)
        return group is not None and (group / probe).exists()

    # -- what is enforced ---------------------------------------------------------------------------------
    def enforced(self) -> dict:
        lim, kind = self.limits, self.kind
        memory = kind if lim.memory_mb and self._has("memory", "memory.max" if kind == "cgroup v2" else
                                                       "memory.limit_in_bytes") else ("rlimit" if lim.memory_mb else None)
        processes = kind if lim.processes and self._has("pids", "pids.max") else ("rlimit" if lim.processes else None)
        cpu_time = ((kind if self._has("cpuacct", "cpuacct.usage") or kind == "cgroup v2" else "rlimit")
                    if lim.cpu_seconds else None)
        share = kind if lim.cpu_share and self._has("cpu", "cpu.max" if kind == "cgroup v2" else
                                                    "cpu.cfs_quota_us") else None
        return {"memory": memory, "processes": processes, "cpu": cpu_time, "share": share,
                "disk": "watch" if lim.disk_mb else None}

    def join(self, pids) -> None:
        """Move processes into the cgroups and give them the rlimits (their children inherit both)."""
        self._joined.extend(int(pid) for pid in pids)
        for pid in pids:
            for group in dict.fromkeys(self.groups.values()):
                _write(group / "cgroup.procs", pid)
            self._rlimits(pid)

    def _rlimits(self, pid: int) -> None:
        enforced, lim = self.enforced(), self.limits

        def cap(kind, value):
            try:
                resource.prlimit(pid, kind, (value, value))
            except (OSError, ValueError):
                pass

        cap(resource.RLIMIT_CORE, 0)
        if lim.disk_mb:
            cap(resource.RLIMIT_FSIZE, lim.disk_mb * 1024 * 1024)
        if enforced["memory"] == "rlimit":
            cap(resource.RLIMIT_DATA, lim.memory_mb * 1024 * 1024)
        if enforced["processes"] == "rlimit" and os.geteuid() != 0:
            cap(resource.RLIMIT_NPROC, lim.processes)
        if lim.cpu_seconds:
            cap(resource.RLIMIT_CPU, lim.cpu_seconds)  # per process: a backstop to the cgroup's total

    # -- reading ------------------------------------------------------------------------------------------
    def _memory_killed(self) -> bool:
        group = self._group("memory")
        if group is None:
            return False
        if self.kind == "cgroup v2":
            return _field(_read(group / "memory.events"), "oom_kill") > 0
        return _field(_read(group / "memory.oom_control"), "oom_kill") > 0

    def _fork_refused(self) -> bool:
        group = self._group("pids")
        return group is not None and _field(_read(group / "pids.events"), "max") > 0

    def cpu_seconds(self) -> float:
        if self.kind == "cgroup v2":
            return _field(_read(self.groups["unified"] / "cpu.stat"), "usage_usec") / 1e6
        group = self._group("cpuacct")
        text = _read(group / "cpuacct.usage").strip() if group else ""
        return int(text) / 1e9 if text.isdigit() else 0.0

    def memory_peak(self) -> int:
        group = self._group("memory")
        if group is None:
            return 0
        text = _read(group / ("memory.peak" if self.kind == "cgroup v2" else "memory.max_usage_in_bytes")).strip()
        return int(text) if text.isdigit() else 0

    def _disk_exceeded(self) -> bool:
        if not self.limits.disk_mb or not self.watch or self._disk_over:
            return self._disk_over
        now = time.monotonic()
        if now - self._disk_checked >= self._disk_every:
            used = self.disk_bytes()
            spent = time.monotonic() - now
            # a walk of a big tree costs; look less often then (at most a tenth of the time walking)
            self._disk_checked, self._disk_every = time.monotonic(), max(2.0, spent * 10)
            self._disk_over = used > self.limits.disk_mb * 1024 * 1024
        return self._disk_over

    def disk_bytes(self) -> int:
        """What the sandbox holds on disk: its writable folders, and the deleted files its processes keep open."""
        devices = set()
        for folder in self.watch:
            try:
                devices.add(folder.stat().st_dev)
            except OSError:
                pass
        processes = self._pids() if self.groups else _children(self._joined)
        return folder_bytes(self.watch) + open_deleted_bytes(processes, devices)

    def exceeded(self) -> str | None:
        if self._memory_killed():
            return "memory"
        if self._fork_refused():
            return "processes"
        if self.limits.cpu_seconds and self.cpu_seconds() > self.limits.cpu_seconds:
            return "cpu"
        if self._disk_exceeded():
            return "disk"
        return None

    def usage(self) -> dict:
        return {"memory": self.memory_peak(), "cpu": round(self.cpu_seconds(), 3)}

    # -- ending -------------------------------------------------------------------------------------------
    def _pids(self) -> list[int]:
        found = set()
        for group in dict.fromkeys(self.groups.values()):
            found.update(int(p) for p in _read(group / "cgroup.procs").split() if p.isdigit())
        return sorted(found)

    def kill_all(self) -> None:
        if "unified" in self.groups and _write(self.groups["unified"] / "cgroup.kill", 1):
            return
        for _ in range(10):  # a process may fork while we kill: a few passes
            pids = self._pids()
            if not pids:
                return
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            time.sleep(0.01)

    def remove(self) -> None:
        if not self.groups:
            return
        self.kill_all()
        for group in dict.fromkeys(self.groups.values()):
            for _ in range(50):  # rmdir waits until the last process has gone
                try:
                    group.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)
        self.groups.clear()
