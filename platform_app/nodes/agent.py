"""The node agent: joins with a single-use token, heartbeats, runs its assigned deployments in sandboxes, and,
with the `build` capability, runs builds.

It reaches the platform over HTTP only (client.py) and keeps everything in a data folder of its own: a
deployment's archive is downloaded by the node's token (or from object storage, where the platform redirects),
checked and unpacked per instance. An instance listens on $PORT inside its sandbox; the agent listens on the
node's address and relays each connection in, so the edge reaches it and nothing else does.
"""
import collections
import logging
import shutil
import signal
import socket
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from platform_app.nodes.builder import Builder
from platform_app.nodes.client import HttpBuildLink, PlatformClient
from platform_app.sandbox import Limits, Network, SandboxUnavailable, relay
from platform_app.sandbox.archive import Refused, unpack
from platform_app.sandbox.base import WORKSPACE

logger = logging.getLogger("platform.agent")
ARTIFACT_MAX_BYTES, ARTIFACT_MAX_FILES = 2 * 1024 ** 3, 200_000  # the platform's own caps are lower


def instance_env(assignment: dict) -> dict:
    """An instance's variables: a plain PATH (with what its build installed), LANG, then the project's."""
    env = {"PATH": f"{WORKSPACE}/.python_packages/bin:{WORKSPACE}/node_modules/.bin:/usr/local/bin:/usr/bin:/bin",
           "LANG": "C.UTF-8", "PYTHONUNBUFFERED": "1", "PYTHONPATH": f"{WORKSPACE}/.python_packages",
           "NPM_CONFIG_UPDATE_NOTIFIER": "false"}  # `npm start` would ask the registry at every start
    env.update({pair["key"]: pair["value"] for pair in assignment["env"]})
    return env


@dataclass
class Instance:
    instance_id: str
    sandboxed: object
    folder: Path
    listener: socket.socket
    stop_relay: object
    lines: collections.deque = field(default_factory=lambda: collections.deque(maxlen=1000))

    @property
    def port(self) -> int:
        return self.listener.getsockname()[1]

    def read(self):
        for raw in iter(self.sandboxed.stdout.readline, b""):
            # NUL cannot be stored in a text column; the platform refuses it.
            self.lines.append(raw.decode("utf-8", errors="replace").rstrip("\n").replace("\0", "\ufffd"))

    def report(self) -> dict:
        code = self.sandboxed.poll()
        broke = self.sandboxed.exceeded()
        error = "" if code is None else (f"went over its {broke} limit" if broke else f"exited with {code}")
        return {"instanceId": self.instance_id, "port": self.port, "pid": self.sandboxed.pid,
                "status": "running" if code is None else "failed", "error": error}

    def stop(self):
        self.stop_relay()  # closes the listener too
        self.sandboxed.terminate()
        self.sandboxed.close()
        shutil.rmtree(self.folder, ignore_errors=True)


class Agent:
    """One node: instances (capability `process`) and builds (capability `build`)."""

    def __init__(self, client: PlatformClient, *, runner, data_dir: Path, host: str = "127.0.0.1",
                 build_slots: int = 0, claim_wait: float = 20.0):
        self.client, self.runner, self.host, self.claim_wait = client, runner, host, claim_wait
        self.data_dir = Path(data_dir)
        (self.data_dir / "instances").mkdir(parents=True, exist_ok=True)
        (self.data_dir / "instances").chmod(0o711)
        self.data_dir.chmod(0o711)
        self.instances: dict[str, Instance] = {}
        self.build_slots = build_slots
        self.builder = Builder(runner, work_root=self.data_dir / "builds")

    @classmethod
    def join(cls, *, server: str, token: str, name: str, runner, data_dir: Path, capacity: int = 4,
             host: str = "127.0.0.1", run: bool = True, build_slots: int = 0, claim_wait: float = 20.0) -> "Agent":
        capabilities = (["process"] if run else []) + (["build"] if build_slots else [])
        client = PlatformClient.join(server=server, token=token, name=name, capabilities=capabilities,
                                     capacity=capacity if run else 0, host=host,
                                     sandbox=runner.enforced(Limits()))
        return cls(client, runner=runner, data_dir=data_dir, host=host, build_slots=build_slots, claim_wait=claim_wait)

    @property
    def node_id(self) -> str:
        return self.client.node_id

    # -- instances ------------------------------------------------------------------------------------------
    def _reports(self) -> tuple[list, list]:
        reports, logs = [], []
        for inst in self.instances.values():
            reports.append(inst.report())
            if inst.lines:
                batch = [inst.lines.popleft() for _ in range(min(len(inst.lines), 200))]
                logs.append({"instanceId": inst.instance_id, "lines": batch})
        return reports, logs

    def step(self) -> dict:
        """One heartbeat: report, then start and stop to match the assignments."""
        reports, logs = self._reports()
        body = self.client.heartbeat({"instances": reports, "logs": logs})
        wanted = {a["instanceId"]: a for a in body["assignments"]}
        for instance_id in [i for i in self.instances if i not in wanted or i in body["stop"]]:
            self.instances.pop(instance_id).stop()
        for instance_id, assignment in wanted.items():
            if instance_id not in self.instances:
                try:
                    self.start(assignment)
                except (Refused, SandboxUnavailable, OSError, httpx.HTTPError) as exc:
                    logger.warning("agent: could not start %s: %s", instance_id, exc)
        return body

    def _artifact(self, assignment: dict, folder: Path) -> None:
        archive = folder / "artifact.tar.gz"
        self.client.download_artifact(assignment["artifactUrl"], archive)
        try:
            with open(archive, "rb") as stream:
                unpack(stream, folder / "app", max_bytes=ARTIFACT_MAX_BYTES, max_files=ARTIFACT_MAX_FILES)
        finally:
            archive.unlink(missing_ok=True)

    def start(self, assignment: dict) -> Instance:
        folder = self.data_dir / "instances" / assignment["instanceId"]
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        folder.chmod(0o711)
        try:
            self._artifact(assignment, folder)
            network = Network.from_wire({**assignment.get("network", {}), "ingress": True})
            sandboxed = self.runner.run(assignment["startCommand"], workdir=folder / "app", scratch=folder / "run",
                                        env=instance_env(assignment), limits=Limits.from_wire(assignment["limits"]),
                                        network=network, label=f"instance-{assignment['instanceId'][-8:]}")
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        listener = socket.create_server((self.host, 0))
        inst = Instance(assignment["instanceId"], sandboxed, folder, listener,
                        relay.forward(listener, sandboxed.connect))
        threading.Thread(target=inst.read, daemon=True).start()
        self.instances[inst.instance_id] = inst
        return inst

    # -- builds ---------------------------------------------------------------------------------------------
    def build_loop(self, stopping: threading.Event) -> None:
        link = HttpBuildLink(self.client)
        while not stopping.is_set():
            try:
                job = self.client.claim(wait=self.claim_wait)
            except httpx.HTTPError as exc:
                logger.warning("builder: claim failed (%s); retrying", exc)
                stopping.wait(2)
                continue
            if job is not None:
                try:
                    self.builder.run_job(job, link)
                except Exception:  # noqa: BLE001 - one broken job must not stop the builder; the reaper ends it
                    logger.exception("builder: the build of %s failed unexpectedly", job.get("id"))

    # -- life -----------------------------------------------------------------------------------------------
    def leave(self) -> None:
        for inst in self.instances.values():
            inst.stop()
        self.instances.clear()
        self.client.leave()

    def run_forever(self, interval: float = 2.0) -> None:
        stopping = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stopping.set())
        signal.signal(signal.SIGINT, lambda *_: stopping.set())
        for slot in range(self.build_slots):
            threading.Thread(target=self.build_loop, args=(stopping,), name=f"build-{slot}", daemon=True).start()
        try:
            while not stopping.is_set():
                try:
                    self.step()
                except httpx.HTTPError as exc:
                    logger.warning("agent: heartbeat failed (%s); retrying", exc)
                stopping.wait(interval)
        finally:
            self.leave()


def wait_for_server(join, attempts: int = 30):
    """`join()` once the platform answers (it may still be starting)."""
    for _ in range(attempts):
        try:
            return join()
        except httpx.ConnectError:
            time.sleep(1)
    raise ConnectionError("The platform did not answer.")
