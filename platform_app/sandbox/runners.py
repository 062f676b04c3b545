"""The runners: bubblewrap (a sandbox), and `none` for a machine without one (it says so wherever it runs).

Bubblewrap (`bwrap`, Debian's `bubblewrap`) gives each command new user, PID, mount, IPC, UTS, cgroup and network
namespaces. Inside: `/usr` (and the `/bin`, `/lib` links to it) read-only, a few files of `/etc` (certificates,
the dynamic linker's cache, alternatives) and made-up `passwd`, `group`, `hosts`; the writable folder at
/workspace, a home and a /tmp of its own; a private /proc and a minimal /dev; nothing else of the machine. It
runs as uid 1000 inside, mapped to SANDBOX_HOST_UID outside when the node runs as root, with no capability,
no new privileges, the system-call filter of seccomp.py, and only the variables it is given. Its network
namespace holds only loopback: the node relays the egress proxy, the endpoints of its allow-list and its own
port (relay.py, netns.py). Limits: limits.py.
"""
import json
import os
import secrets
import select
import shutil
import socket
import subprocess
from functools import lru_cache
from pathlib import Path

from platform_app.sandbox import relay
from platform_app.sandbox.base import (INSIDE_PORT, PROXY_PORT, WORKSPACE, ImageRoot, Limits, Network, Runner,
                                       Sandboxed, SandboxUnavailable)
from platform_app.sandbox.limits import Enforcer
from platform_app.sandbox.netns import NetnsBridge
from platform_app.sandbox.seccomp import filter_fd, filter_program

HOME = "/home/sandbox"
SHIMS = "/opt/sandbox/bin"   # `python` where the system has only `python3`
IMAGE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"  # an image's without its own PATH
SYSTEM_LINKS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
ETC = ("/etc/alternatives", "/etc/ssl/certs", "/etc/ssl/openssl.cnf", "/etc/ca-certificates", "/etc/ld.so.cache",
       "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime", "/etc/timezone", "/etc/mime.types",
       "/etc/nsswitch.conf", "/etc/protocols", "/etc/services", "/etc/host.conf", "/etc/os-release",
       "/etc/debian_version", "/etc/python3", "/etc/python3.11")
MADE_UP = {
    "/etc/passwd": "root:x:0:0:root:/root:/bin/sh\nsandbox:x:1000:1000:sandbox:/home/sandbox:/bin/sh\n"
                   "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
    "/etc/group": "root:x:0:\nsandbox:x:1000:\nnogroup:x:65534:\n",
    "/etc/hosts": "127.0.0.1 localhost sandbox\n::1 localhost\n",
    "/etc/hostname": "sandbox\n",
}


def _data_fd(text: str) -> int:
    read, write = os.pipe()
    os.write(write, text.encode())
    os.close(write)
    return read


def _chown_tree(root: Path, uid: int, gid: int) -> None:
    os.lchown(root, uid, gid)
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            os.lchown(os.path.join(folder, name), uid, gid)


def _reachable(folder: Path, uid: int) -> None:
    """bwrap runs as `uid`: it must be able to walk down to the folders it binds."""
    for parent in Path(folder).resolve().parents:
        info = parent.stat()
        if not (info.st_mode & 0o001 or (info.st_uid == uid and info.st_mode & 0o100)):
            raise SandboxUnavailable(f"The sandbox's user (uid {uid}, SANDBOX_HOST_UID) cannot reach {folder}: "
                                     f"{parent} is not traversable (chmod o+x, or move the node's work folder).")


def _read_info(fd: int, timeout: float = 10.0) -> dict:
    """bwrap's --info-fd document ({"child-pid": N, ...}); {} when bwrap ended without writing it."""
    data = b""
    while True:
        ready, _, _ = select.select([fd], [], [], timeout)
        chunk = os.read(fd, 4096) if ready else b""
        if not chunk:
            return {}
        data += chunk
        try:
            return json.loads(data)
        except ValueError:
            continue


def _with_shims(env: dict) -> dict:
    env = dict(env)
    path = env.get("PATH") or "/usr/local/bin:/usr/bin:/bin"
    env["PATH"] = path if SHIMS in path.split(":") else f"{path}:{SHIMS}"
    return env


class _LimitedRunner(Runner):
    """A runner whose limits are a cgroup under `cgroup_parent` (limits.py): what it enforces is read from a probe
    cgroup made and removed here."""

    cgroup_parent = "platform-sandbox"

    def enforced(self, limits: Limits) -> dict:
        probe = Enforcer(limits, name=f"probe-{os.getpid()}-{secrets.token_hex(3)}", parent=self.cgroup_parent)
        try:
            return self._report(probe)
        finally:
            probe.remove()

    def _report(self, enforcer: Enforcer) -> dict:
        raise NotImplementedError


class BubblewrapRunner(_LimitedRunner):
    name = "bubblewrap"
    description = "bubblewrap: namespaces, a read-only system, seccomp, its own network with a guarded egress"

    def __init__(self, *, host_uid: int = 65534, host_gid: int = 65534, readonly_paths=(),
                 cgroup_parent: str = "platform-sandbox"):
        self.host_uid, self.host_gid = host_uid, host_gid
        self.readonly_paths, self.cgroup_parent = tuple(readonly_paths), cgroup_parent

    def _args(self, *, workdir: Path, cwd: str, home: Path, tmp: Path, fds: list, mounts=(),
              image: ImageRoot | None = None) -> list[str]:
        uid, gid = (image.uid, image.gid) if image is not None else (1000, 1000)
        args = ["bwrap", "--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent", "--new-session",
                "--hostname", "sandbox", "--uid", str(uid), "--gid", str(gid)]
        args += self._image_args(image, tmp, mounts) if image is not None else self._system_args(
            workdir=workdir, cwd=cwd, home=home, tmp=tmp, fds=fds, mounts=mounts)
        seccomp = filter_fd()
        if seccomp is not None:
            fds.append(seccomp)
            args += ["--seccomp", str(seccomp)]
        return args

    @staticmethod
    def _image_args(image: ImageRoot, tmp: Path, mounts) -> list[str]:
        """An image's root filesystem as `/`, read-only; a private /proc and /dev, /tmp writable (the scratch
        folder, measured like a workspace), the volumes; nothing of the node. The mount points are in the root
        (the node made them when it built it: nothing can be made in a read-only root)."""
        args = ["--ro-bind", str(image.root), "/", "--proc", "/proc", "--dev", "/dev", "--bind", str(tmp), "/tmp"]
        for folder, inside in mounts:
            args += ["--bind", str(folder), inside]
        return args + ["--chdir", image.cwd or "/"]

    def _system_args(self, *, workdir: Path, cwd: str, home: Path, tmp: Path, fds: list, mounts=()) -> list[str]:
        args = ["--ro-bind", "/usr", "/usr"]
        for name in SYSTEM_LINKS:
            path = Path("/") / name
            if path.is_symlink():
                args += ["--symlink", os.readlink(path), str(path)]
            elif path.is_dir():
                args += ["--ro-bind", str(path), str(path)]
        for path in ETC:
            args += ["--ro-bind-try", path, path]
        for path, text in MADE_UP.items():
            fd = _data_fd(text)
            fds.append(fd)
            args += ["--ro-bind-data", str(fd), path]
        for path in self.readonly_paths:
            args += ["--ro-bind-try", path, path]
        args += ["--proc", "/proc", "--dev", "/dev", "--bind", str(workdir), WORKSPACE, "--bind", str(home), HOME,
                 "--bind", str(tmp), "/tmp", "--dir", "/var", "--symlink", "../tmp", "/var/tmp", "--dir", SHIMS]
        for folder, inside in mounts:
            args += ["--bind", str(folder), inside]
        if not Path("/usr/bin/python").exists() and Path("/usr/bin/python3").exists():
            args += ["--symlink", "/usr/bin/python3", f"{SHIMS}/python"]
        args += ["--chdir", f"{WORKSPACE}/{cwd}".rstrip("/")]
        return args

    def _report(self, enforcer: Enforcer) -> dict:
        return {"runner": self.name, "isolation": {"filesystem": True, "processes": True, "network": True,
                                                   "syscalls": filter_program() is not None},
                "limits": {**enforcer.enforced(), "time": "watch"}}

    def run(self, command: str, *, workdir: Path, cwd: str = "", scratch: Path, env: dict, limits: Limits,
            network: Network, mounts=(), label: str = "sandbox", image: ImageRoot | None = None) -> Sandboxed:
        home, tmp = scratch / "home", scratch / "tmp"
        home.mkdir(parents=True, exist_ok=True)
        tmp.mkdir(parents=True, exist_ok=True)
        writable = (tmp, *(m[0] for m in mounts)) if image is not None else (workdir, home, tmp,
                                                                            *(m[0] for m in mounts))
        as_root = os.geteuid() == 0
        if as_root:  # the sandbox's processes belong to an unprivileged user outside too
            if image is not None:
                _reachable(image.root, self.host_uid)  # read-only and world-readable: not handed over
            for folder in writable:
                _reachable(folder, self.host_uid)
                _chown_tree(folder, self.host_uid, self.host_gid)
        if image is not None:
            env = {"PATH": IMAGE_PATH, "HOME": "/", **env, "TMPDIR": "/tmp"}
        else:
            env = _with_shims({**env, "HOME": HOME, "TMPDIR": "/tmp"})
        if network.ingress:
            env["PORT"] = str(INSIDE_PORT)
        if network.egress:
            proxy = f"http://127.0.0.1:{PROXY_PORT}"
            env.update(HTTP_PROXY=proxy, HTTPS_PROXY=proxy, http_proxy=proxy, https_proxy=proxy,
                       NO_PROXY="localhost,127.0.0.1,::1", no_proxy="localhost,127.0.0.1,::1")
        enforcer = Enforcer(limits, name=f"{label}-{secrets.token_hex(4)}", parent=self.cgroup_parent,
                            watch=list(writable))
        fds: list[int] = []
        info_read, info_write = os.pipe()
        block_read, block_write = os.pipe()
        try:
            args = self._args(workdir=workdir, cwd=cwd, home=home, tmp=tmp, fds=fds, mounts=mounts, image=image)
            argv = list(image.argv) if image is not None else ["/bin/sh", "-c", command]
            args += ["--info-fd", str(info_write), "--block-fd", str(block_read), "--", *argv]
            owner = {"user": self.host_uid, "group": self.host_gid, "extra_groups": []} if as_root else {}
            popen = subprocess.Popen(args, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, start_new_session=True,
                                     pass_fds=(*fds, info_write, block_read), **owner)
        except OSError as exc:
            enforcer.remove()
            raise SandboxUnavailable(f"bwrap could not start: {exc}")
        finally:
            for fd in (*fds, info_write, block_read):
                os.close(fd)
        sandboxed = Sandboxed(popen, runner=self.name, enforced=self._report(enforcer), enforcer=enforcer,
                              port=INSIDE_PORT if network.ingress else None)
        try:
            info = _read_info(info_read)
            if not info.get("child-pid"):
                output = popen.stdout.read(2000).decode(errors="replace").strip() if popen.wait(10) is not None else ""
                raise SandboxUnavailable(f"bwrap could not make the sandbox: {output or 'no reason given'}")
            enforcer.join([popen.pid, info["child-pid"]])  # before the command runs: its children follow
            self._network(sandboxed, info["child-pid"], network, label)
        except BaseException:
            os.close(block_write)
            sandboxed.close()
            raise
        finally:
            os.close(info_read)
        os.write(block_write, b"go")  # now the command runs
        os.close(block_write)
        return sandboxed

    def _network(self, sandboxed: Sandboxed, pid: int, network: Network, label: str) -> None:
        if not (network.egress or network.endpoints or network.ingress):
            return
        bridge = NetnsBridge(pid)
        sandboxed._cleanups.append(bridge.close)
        if network.egress:
            policy = relay.EgressPolicy(network.allowed_networks, network.dns_servers)
            sandboxed._cleanups.append(relay.serve_egress(bridge.listen(PROXY_PORT), policy, label))
        for endpoint in network.endpoints:
            sandboxed._cleanups.append(relay.serve_endpoint(bridge.listen(endpoint.local_port), endpoint))
        if network.ingress:
            def connect(timeout: float = 5.0) -> socket.socket:
                sock = bridge.socket()
                sock.settimeout(timeout)
                try:
                    sock.connect(("127.0.0.1", INSIDE_PORT))
                except OSError:
                    sock.close()
                    raise
                return sock

            sandboxed._connect = connect


class UnsandboxedRunner(_LimitedRunner):
    """No sandbox: the command runs as the node's own user, with the node's files and network in reach. For a
    laptop without bubblewrap; production refuses it unless SANDBOX_ALLOW_NONE (docs/isolation.md)."""

    name = "none"
    description = "no sandbox: the command runs as the node's own user, with its files and network"
    WARNING = ("This runs WITHOUT a sandbox (bubblewrap is not available here): the code can read this "
               "machine's files and reach its network.")

    def __init__(self, *, cgroup_parent: str = "platform-sandbox"):
        self.cgroup_parent = cgroup_parent

    def _report(self, enforcer: Enforcer) -> dict:
        return {"runner": self.name, "warning": self.WARNING,
                "isolation": {"filesystem": False, "processes": False, "network": False, "syscalls": False},
                "limits": {**enforcer.enforced(), "time": "watch"}}

    def run(self, command: str, *, workdir: Path, cwd: str = "", scratch: Path, env: dict, limits: Limits,
            network: Network, mounts=(), label: str = "sandbox", image: ImageRoot | None = None) -> Sandboxed:
        if image is not None:
            raise SandboxUnavailable("An image runs with its root filesystem as `/` in a sandbox; this node has "
                                     "none (bubblewrap).")
        if mounts:
            raise SandboxUnavailable("Volumes are mounted into a sandbox; this node has none (bubblewrap).")
        home, tmp = scratch / "home", scratch / "tmp"
        home.mkdir(parents=True, exist_ok=True)
        tmp.mkdir(parents=True, exist_ok=True)
        env = {**env, "HOME": str(home), "TMPDIR": str(tmp)}
        port = None
        if network.ingress:
            with socket.socket() as sock:
                sock.bind(("127.0.0.1", 0))
                port = sock.getsockname()[1]
            env["PORT"] = str(port)
        enforcer = Enforcer(limits, name=f"{label}-{secrets.token_hex(4)}", parent=self.cgroup_parent,
                            watch=[workdir, home, tmp])
        # The shell waits for one line before it becomes the command, so the limits are on it first.
        popen = subprocess.Popen(["/bin/sh", "-c", 'read -r _; exec /bin/sh -c "$1"', "sh", command],
                                 cwd=workdir / cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, start_new_session=True)
        enforcer.join([popen.pid])
        sandboxed = Sandboxed(popen, runner=self.name, enforced=self._report(enforcer), enforcer=enforcer, port=port)
        for endpoint in network.endpoints:  # the same addresses as in a sandbox, on the machine's own loopback
            try:
                listener = socket.create_server(("127.0.0.1", endpoint.local_port))
            except OSError:
                continue  # another instance of the project relays it already
            sandboxed._cleanups.append(relay.serve_endpoint(listener, endpoint))
        popen.stdin.write(b"\n")
        popen.stdin.close()
        if port is not None:
            sandboxed._connect = lambda timeout=5.0: socket.create_connection(("127.0.0.1", port), timeout=timeout)
        return sandboxed


@lru_cache(maxsize=1)
def bubblewrap_problem() -> str:
    """Why bubblewrap cannot run here ('' when it can): tried once per process."""
    if shutil.which("bwrap") is None:
        return "bwrap is not installed (Debian: apt-get install bubblewrap)"
    runner = BubblewrapRunner()
    scratch = Path(os.environ.get("TMPDIR", "/tmp")) / f"sandbox-probe-{os.getpid()}-{secrets.token_hex(3)}"
    try:
        (scratch / "work").mkdir(parents=True)
        proc = runner.run("true", workdir=scratch / "work", scratch=scratch, env={"PATH": "/usr/bin:/bin"},
                          limits=Limits(memory_mb=0, processes=0, disk_mb=0), network=Network(egress=False),
                          label="probe")
        code = proc.wait(10)
        output = proc.stdout.read().decode(errors="replace").strip()
        proc.close()
        return "" if code == 0 else f"bwrap failed: {output[:300] or f'exit {code}'}"
    except (SandboxUnavailable, OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)[:300]
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def runner_get(name: str = "auto", *, allow_none: bool = False, host_uid: int = 65534, host_gid: int = 65534,
               readonly_paths=(), cgroup_parent: str = "platform-sandbox") -> Runner:
    """The runner `name` (`auto`, `bubblewrap`, `none`). `auto` takes bubblewrap where it works, else `none`
    when `allow_none`; otherwise SandboxUnavailable names what is missing and the setting that would allow it."""
    if name not in ("auto", "bubblewrap", "none"):
        raise SandboxUnavailable(f"SANDBOX_RUNNER must be auto, bubblewrap or none, not {name!r}.")
    if name in ("auto", "bubblewrap"):
        problem = bubblewrap_problem()
        if not problem:
            return BubblewrapRunner(host_uid=host_uid, host_gid=host_gid, readonly_paths=readonly_paths,
                                    cgroup_parent=cgroup_parent)
        if name == "bubblewrap" or not allow_none:
            raise SandboxUnavailable(f"No sandbox: {problem}. Install bubblewrap, or set SANDBOX_ALLOW_NONE=true "
                                     "to run strangers' code without one (unsafe).")
    elif not allow_none:
        raise SandboxUnavailable("SANDBOX_RUNNER=none runs strangers' code without a sandbox; set "
                                 "SANDBOX_ALLOW_NONE=true to allow it (unsafe).")
    return UnsandboxedRunner(cgroup_parent=cgroup_parent)
