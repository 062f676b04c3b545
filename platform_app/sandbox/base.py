"""The runner interface: what a sandbox is given and what it answers.

A runner is handed a command, a writable folder (mounted at `/workspace` in a sandbox), the variables, the
limits and the network the command may have, and answers a `Sandboxed` process; or an image's root filesystem
and command (`ImageRoot`), which bubblewrap runs with that root as `/` (docs/images.md). Bubblewrap is the
runner shipped here; a container runtime (Podman, Docker, a Kubernetes job) would fit behind the same `run()`.
"""
import os
import signal
import socket
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

WORKSPACE = "/workspace"   # where the writable folder appears inside a sandbox
INSIDE_PORT = 8080         # the port an instance listens on inside its own network namespace
PROXY_PORT = 3128          # the egress proxy on the sandbox's own loopback


class SandboxUnavailable(Exception):
    """The runner asked for cannot run here (no bwrap, no user namespaces...): the reason, for an operator."""


@dataclass(frozen=True)
class Limits:
    """What one build or instance may use. 0 leaves a limit out."""

    memory_mb: int = 2048
    cpu_seconds: int = 0       # CPU time of every process together
    processes: int = 512
    disk_mb: int = 4096        # written into the writable folders (workspace, home, /tmp)
    cpu_share: float = 0.0     # cores; 0: no cap

    # On the wire (a build job, an instance's assignment) the keys are single words, which the platform's
    # camelCase renderer leaves alone.
    WIRE = (("memory", "memory_mb"), ("cpu", "cpu_seconds"), ("processes", "processes"), ("disk", "disk_mb"),
            ("share", "cpu_share"))

    def to_wire(self) -> dict:
        return {wire: getattr(self, name) for wire, name in self.WIRE}

    @classmethod
    def from_wire(cls, data: dict) -> "Limits":
        return cls(**{name: data[wire] for wire, name in cls.WIRE if data.get(wire) is not None})


@dataclass(frozen=True)
class Endpoint:
    """An internal service opened to one sandbox (a project's own database): reached inside at
    127.0.0.1:`local_port`, relayed to `host`:`port` by the node, through the protocol guard `guard` names
    (platform_app/sandbox/guards.py: `{"kind": "postgres", "user", "database"}`, `{"kind": "redis", "user",
    "password", "maxCommandBytes"?}`), or as plain bytes without one."""

    host: str
    port: int
    local_port: int
    guard: dict | None = field(default=None, hash=False, compare=False)


@dataclass(frozen=True)
class Network:
    """What a sandbox may reach. Its own network namespace holds only loopback; the node relays the rest."""

    egress: bool = True                 # the internet, through the guarded proxy (HTTP(S)_PROXY)
    allowed_networks: tuple = ()        # CIDRs the egress lets through although private (an internal mirror)
    dns_servers: tuple = ()             # resolvers the egress asks (`ip[:port]`); empty: the system's
    endpoints: tuple = ()               # Endpoint: the per-sandbox allow-list of internal services
    ingress: bool = False               # the command listens on $PORT; `Sandboxed.connect()` reaches it

    def to_wire(self) -> dict:
        return {"egress": self.egress, "networks": list(self.allowed_networks), "dns": list(self.dns_servers),
                "endpoints": [[e.host, e.port, e.local_port, e.guard] for e in self.endpoints],
                "ingress": self.ingress}

    @classmethod
    def from_wire(cls, data: dict) -> "Network":
        return cls(egress=bool(data.get("egress", True)), allowed_networks=tuple(data.get("networks") or ()),
                   dns_servers=tuple(data.get("dns") or ()), ingress=bool(data.get("ingress", False)),
                   endpoints=tuple(Endpoint(str(e[0]), int(e[1]), int(e[2]), e[3] if len(e) > 3 else None)
                                   for e in data.get("endpoints") or ()))


@dataclass(frozen=True)
class ImageRoot:
    """What an image runs as (platform_app/nodes/oci.py): its root filesystem, mounted read-only as `/`, the
    command (the config's Entrypoint + Cmd, executed as is, no shell), the numeric user and group inside the
    sandbox's user namespace, and the folder it starts in."""

    root: Path
    argv: tuple
    uid: int = 0
    gid: int = 0
    cwd: str = "/"


@dataclass
class Sandboxed:
    """A running sandbox. `stdout` carries its output (stderr merged); `exceeded()` names the limit it broke
    (`memory`, `processes`, `cpu`, `disk`) once it has; `close()` ends it and everything it started."""

    popen: subprocess.Popen
    runner: str
    enforced: dict                      # what was enforced, and how (reported with every build and instance)
    enforcer: object = None             # platform_app.sandbox.limits.Enforcer
    port: int | None = None             # the port the command was told to listen on ($PORT)
    _connect: object = None             # () -> a socket connected to that port
    _cleanups: list = field(default_factory=list)

    @property
    def pid(self) -> int:
        return self.popen.pid

    @property
    def stdout(self):
        return self.popen.stdout

    def poll(self):
        return self.popen.poll()

    def wait(self, timeout: float | None = None) -> int:
        return self.popen.wait(timeout=timeout)

    def exceeded(self) -> str | None:
        return self.enforcer.exceeded() if self.enforcer is not None else None

    def usage(self) -> dict:
        return self.enforcer.usage() if self.enforcer is not None else {}

    def connect(self, timeout: float = 5.0) -> socket.socket:
        """A connection to the command's port (instances); OSError when nothing listens there."""
        if self._connect is None:
            raise OSError("This sandbox was started without ingress.")
        return self._connect(timeout)

    def kill(self) -> None:
        """SIGKILL to everything the command started (its process group, and its cgroup where there is one)."""
        if self.enforcer is not None:
            self.enforcer.kill_all()
        try:
            os.killpg(self.popen.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def terminate(self, grace: float = 5.0) -> None:
        """SIGTERM, then SIGKILL after `grace` seconds."""
        try:
            os.killpg(self.popen.pid, signal.SIGTERM)
            self.popen.wait(timeout=grace)
        except (ProcessLookupError, PermissionError, subprocess.TimeoutExpired):
            pass
        self.kill()

    def close(self) -> None:
        """End the command if it still runs, wait for it, release its relays, cgroups and helper."""
        if self.popen.poll() is None:
            self.kill()
        try:
            self.popen.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        if self.popen.stdout is not None:
            self.popen.stdout.close()
        for cleanup in reversed(self._cleanups):
            try:
                cleanup()
            except Exception:  # noqa: BLE001 - a cleanup that fails must not stop the others
                pass
        self._cleanups.clear()
        if self.enforcer is not None:
            self.enforcer.remove()


class Runner:
    """Starts commands in sandboxes of one kind. `name` is what builds and instances report."""

    name = ""
    description = ""

    def run(self, command: str, *, workdir: Path, cwd: str = "", scratch: Path, env: dict, limits: Limits,
            network: Network, mounts=(), label: str = "sandbox", image: ImageRoot | None = None) -> Sandboxed:
        """Start `/bin/sh -c command` with `workdir` writable (at /workspace in a sandbox), `cwd` relative to it,
        `scratch` the runner's own space (home and /tmp, which the caller removes), `env` the only variables,
        `mounts` more writable folders as (folder on the node, path inside) pairs (volumes). With `image`, its
        root filesystem is `/` (read-only) and its argv runs instead; `workdir` and `command` are not used."""
        raise NotImplementedError

    def enforced(self, limits: Limits) -> dict:
        """What this runner enforces on this machine (without starting anything): for the node's report."""
        raise NotImplementedError
