"""The node agent: joins with a single-use token, heartbeats, runs its assigned deployments in sandboxes, and,
with the `build` capability, runs builds.

It reaches the platform over HTTP only (client.py) and keeps everything in a data folder of its own: a
deployment's archive is downloaded by the node's token (or from object storage, where the platform redirects),
checked and unpacked per instance. An instance listens on $PORT inside its sandbox; the agent listens on the
node's address and relays each connection in, so the edge reaches it and nothing else does.
"""
import collections
import logging
import os
import signal
import socket
import threading
import time
from pathlib import Path

import httpx

from platform_app.nodes import oci
from platform_app.nodes.builder import Builder
from platform_app.nodes.client import HttpBuildLink, PlatformClient
from platform_app.nodes.images import ImageCache, ImageError
from platform_app.sandbox import Limits, Network, SandboxUnavailable, relay
from platform_app.sandbox.archive import Refused, unpack
from platform_app.sandbox.files import remove_tree
from platform_app.sandbox.limits import folder_bytes
from platform_app.sandbox.base import WORKSPACE
from platform_app.sandbox.output import CHUNK_BYTES, LineSplitter

logger = logging.getLogger("platform.agent")
ARTIFACT_MAX_BYTES, ARTIFACT_MAX_FILES = 2 * 1024 ** 3, 200_000  # the platform's own caps are lower
SETTLE_SECONDS, SETTLE_POLL_SECONDS = 10, 0.25  # an instance this new and not yet running is reported this often
MAX_LINE_CHARS = 5000  # of an instance's output line; the heartbeat refuses longer (agents.MAX_LOG_LINE_CHARS)


def instance_env(assignment: dict) -> dict:
    """An instance's variables: a plain PATH (with what its build installed), LANG, then the project's."""
    env = {"PATH": f"{WORKSPACE}/.python_packages/bin:{WORKSPACE}/node_modules/.bin:/usr/local/bin:/usr/bin:/bin",
           "LANG": "C.UTF-8", "PYTHONUNBUFFERED": "1", "PYTHONPATH": f"{WORKSPACE}/.python_packages",
           "NPM_CONFIG_UPDATE_NOTIFIER": "false"}  # `npm start` would ask the registry at every start
    env.update({pair["key"]: pair["value"] for pair in assignment["env"]})
    return env


class Instance:
    """One assigned instance: its own copy of the artifact, its volumes, the node socket the edge reaches it at
    (kept across restarts), and the sandbox running it now. An exit restarts it after 1, 2, 4... seconds; after
    `max_restarts` failures in a row it is `crashed`. With a health check path it is `starting` until that path
    answers below 400."""

    def __init__(self, agent, assignment: dict, folder: Path, listener: socket.socket, pulled=None):
        self.agent, self.assignment, self.folder, self.listener = agent, assignment, folder, listener
        self.pulled = pulled  # an image's (images.Pulled), or None: the artifact at folder/app
        self.instance_id = assignment["instanceId"]
        self.lines: collections.deque = collections.deque(maxlen=1000)
        self.restarts, self.next_start, self.healthy, self.crashed, self.error = 0, 0.0, False, False, ""
        self.started_at = time.monotonic()
        self.health_path = assignment.get("healthCheckPath") or ""
        self.sandboxed = None
        self.run()
        self.stop_relay = relay.forward(listener, lambda: self.sandboxed.connect())

    @property
    def port(self) -> int:
        return self.listener.getsockname()[1]

    def run(self) -> None:
        a = self.assignment
        mounts = [(self.agent.volume_folder(v["id"]), v["mountPath"]) for v in a.get("volumes") or []]
        image, env = None, instance_env(a)
        if self.pulled is not None:  # the image's root as `/`, its command; its Env under the project's
            image = self.pulled.image_root()
            env = {**self.pulled.env(), **{pair["key"]: pair["value"] for pair in a["env"]}}
        self.sandboxed = self.agent.runner.run(
            a["startCommand"], workdir=self.folder / "app", scratch=self.folder / "run", env=env,
            limits=Limits.from_wire(a["limits"]), network=Network.from_wire({**a.get("network", {}), "ingress": True}),
            mounts=mounts, label=f"instance-{self.instance_id[-8:]}", image=image)
        self.healthy = not self.health_path
        threading.Thread(target=self.read, args=(self.sandboxed,), daemon=True).start()

    def read(self, sandboxed):
        splitter, fd = LineSplitter(), sandboxed.stdout.fileno()
        try:
            while chunk := os.read(fd, CHUNK_BYTES):
                self.lines.extend(line[:MAX_LINE_CHARS] for line in splitter.feed(chunk))  # the platform's bound
        except (OSError, ValueError):  # closed by a restart
            return
        last = splitter.end()
        if last is not None:
            self.lines.append(last[:MAX_LINE_CHARS])

    def check(self) -> None:
        """Restart an instance that exited (after its backoff), or give up; ask its health check path."""
        if self.crashed:
            return
        code = self.sandboxed.poll()
        if code is not None:
            if not self.next_start:
                broke = self.sandboxed.exceeded()
                self.error = f"went over its {broke} limit" if broke else f"exited with {code}"
                self.restarts += 1
                if self.restarts > self.assignment.get("maxRestarts", 5):
                    self.crashed = True
                    self.error += f"; gave up after {self.restarts - 1} restarts"
                    return
                self.next_start = time.monotonic() + 2 ** (self.restarts - 1)
                self.lines.append(f"[agent] {self.error}; restarting in {2 ** (self.restarts - 1)}s")
            elif time.monotonic() >= self.next_start:
                self.sandboxed.close()
                self.next_start = 0.0
                self.run()
            return
        if not self.healthy:
            self.healthy = self._answers()
            if self.healthy:
                self.restarts, self.error = 0, ""

    def _answers(self) -> bool:
        try:
            with self.sandboxed.connect(timeout=2) as sock:
                sock.sendall(f"GET {self.health_path} HTTP/1.0\r\nHost: localhost\r\n\r\n".encode())
                status = sock.recv(64).split(b" ", 2)
            return len(status) > 1 and status[1].isdigit() and int(status[1]) < 400
        except OSError:
            return False

    @property
    def status(self) -> str:
        running = self.sandboxed.poll() is None  # an exited one is `starting` again after its backoff
        return "crashed" if self.crashed else "running" if running and self.healthy else "starting"

    def report(self) -> dict:
        status = self.status
        report = {"instanceId": self.instance_id, "port": self.port, "pid": self.sandboxed.pid, "status": status,
                  "error": self.error if status != "running" else "", "restarts": self.restarts}
        try:
            peak = self.sandboxed.usage().get("memory") or 0  # the sandbox's peak memory, where its cgroup tells
        except (OSError, ValueError):
            peak = 0
        if peak:
            report["memoryPeakBytes"] = int(peak)
        return report

    def stop(self):
        self.stop_relay()  # closes the listener too
        self.sandboxed.terminate()
        self.sandboxed.close()
        remove_tree(self.folder)
        if self.pulled is not None:
            self.agent.image_released(self.pulled.digest)


class FailedInstance:
    """An instance whose image could not be pulled or run: reported `crashed` with the reason until the
    platform stops it (a pull is not retried at every heartbeat: a limit or a refused layer stays so)."""

    def __init__(self, assignment: dict, error: str):
        self.assignment, self.instance_id, self.error = assignment, assignment["instanceId"], error[:2000]
        self.lines: collections.deque = collections.deque(maxlen=10)

    def check(self) -> None:
        pass

    def report(self) -> dict:
        return {"instanceId": self.instance_id, "port": None, "pid": None, "status": "crashed", "error": self.error,
                "restarts": 0}

    def stop(self) -> None:
        pass


class PendingImage:
    """An image instance whose image is being pulled, in a thread (one pull at a time), so that the node's
    heartbeats go on: `starting` until the pull ends, then started by the agent, or `crashed` with the reason."""

    def __init__(self, agent, assignment: dict):
        self.agent, self.assignment, self.instance_id = agent, assignment, assignment["instanceId"]
        self.lines: collections.deque = collections.deque(maxlen=10)
        self.report_of_pull = {"instanceId": self.instance_id, "lines": [], "error": ""}  # for the deployment's log
        self.pulled, self.error, self.done, self.canceled = None, "", False, False
        threading.Thread(target=self._pull, name=f"pull-{self.instance_id[-8:]}", daemon=True).start()

    def _pull(self) -> None:
        try:
            with self.agent.pull_lock:
                if not self.canceled:
                    self.pulled = self.agent.image_pull(self.assignment, self.report_of_pull)
        except (ImageError, oci.RegistryError) as exc:
            self.error = str(exc)
        except Exception as exc:  # noqa: BLE001 - a broken pull must not leave the instance starting forever
            logger.exception("agent: the pull for %s failed unexpectedly", self.instance_id)
            self.error = f"The pull failed unexpectedly ({exc.__class__.__name__})."
        finally:
            self.done = True
            if self.canceled and self.pulled is not None:
                self.agent.image_released(self.pulled.digest)
            self.agent.wake.set()

    def check(self) -> None:
        pass

    def report(self) -> dict:
        return {"instanceId": self.instance_id, "port": None, "pid": None, "status": "starting", "error": "",
                "restarts": 0}

    def stop(self) -> None:
        self.canceled = True
        if self.done and self.pulled is not None:
            self.agent.image_released(self.pulled.digest)


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
        self._volumes_measured, self._volume_usage = float("-inf"), []
        self.build_slots = build_slots
        self.builder = Builder(runner, work_root=self.data_dir / "builds")
        self.image_cache: ImageCache | None = None
        self.pulls: list[dict] = []  # what pulls did, for the deployments' logs at the next heartbeat
        self.changed, self.in_sync = False, True  # by the last heartbeat: started or stopped some; runs all it was told
        self.pull_lock, self.wake = threading.Lock(), threading.Event()  # one pull at a time; a pull ended

    @classmethod
    def join(cls, *, server: str, token: str, name: str, runner, data_dir: Path, capacity: int = 4,
             host: str = "127.0.0.1", run: bool = True, build_slots: int = 0, claim_wait: float = 20.0) -> "Agent":
        # `image`: images run with their root as `/`, which only a sandbox does (bubblewrap)
        capabilities = (["process"] + (["image"] if runner.name == "bubblewrap" else []) if run else []) + (
            ["build"] if build_slots else [])
        client = PlatformClient.join(server=server, token=token, name=name, capabilities=capabilities,
                                     capacity=capacity if run else 0, host=host,
                                     sandbox=runner.enforced(Limits()))
        return cls(client, runner=runner, data_dir=data_dir, host=host, build_slots=build_slots, claim_wait=claim_wait)

    @property
    def node_id(self) -> str:
        return self.client.node_id

    # -- instances ------------------------------------------------------------------------------------------
    def volume_folder(self, volume_id: str) -> Path:
        """A volume's folder on this node: it outlives its instances."""
        folder = self.data_dir / "volumes" / volume_id
        folder.mkdir(parents=True, exist_ok=True)
        folder.parent.chmod(0o711)
        return folder

    def _volumes(self) -> list[dict]:
        """What each volume folder holds (measured at most every 30 s)."""
        now = time.monotonic()
        if now - self._volumes_measured >= 30:
            root = self.data_dir / "volumes"
            self._volume_usage = [{"id": f.name, "usedBytes": folder_bytes([f])} for f in
                                  (root.iterdir() if root.is_dir() else [])]
            self._volumes_measured = now
        return self._volume_usage

    def _reports(self) -> tuple[list, list]:
        reports, logs = [], []
        for inst in self.instances.values():
            inst.check()
            reports.append(inst.report())
            if inst.lines:
                batch = [inst.lines.popleft() for _ in range(min(len(inst.lines), 200))]
                logs.append({"instanceId": inst.instance_id, "lines": batch})
        return reports, logs

    def step(self, wait: float = 0.0) -> dict:
        """One heartbeat: report, then start and stop to match the assignments. With `wait`, the platform holds
        the answer up to that long while it has nothing new to ask."""
        pulled = self._pulls_finished()
        reports, logs = self._reports()
        pulls, self.pulls = self.pulls[:100], self.pulls[100:]
        body = self.client.heartbeat({"instances": reports, "logs": logs, "volumes": self._volumes(),
                                      **({"pulls": pulls} if pulls else {})}, wait=wait)
        wanted, before = {a["instanceId"]: a for a in body["assignments"]}, set(self.instances)
        for instance_id in [i for i in self.instances if i not in wanted or i in body["stop"]]:
            self.instances.pop(instance_id).stop()
        for instance_id, assignment in wanted.items():
            if instance_id not in self.instances:
                try:
                    self.start(assignment)
                except (Refused, SandboxUnavailable, OSError, httpx.HTTPError) as exc:
                    logger.warning("agent: could not start %s: %s", instance_id, exc)
        self.changed = pulled or set(self.instances) != before
        self.in_sync = set(wanted) <= set(self.instances) and not body["stop"]  # a start failed: not yet
        return body

    def _waiting(self) -> bool:
        """On a pull, or on a start that failed: nothing the platform can tell the node sooner."""
        return not self.in_sync or any(isinstance(i, PendingImage) for i in self.instances.values())

    def settling(self) -> bool:
        """An instance started in the last SETTLE_SECONDS is not running yet: its state is worth telling soon."""
        now = time.monotonic()
        return any(isinstance(i, Instance) and now - i.started_at < SETTLE_SECONDS and i.status != "running"
                   for i in self.instances.values())

    def _artifact(self, assignment: dict, folder: Path) -> None:
        archive = folder / "artifact.tar.gz"
        self.client.download_artifact(assignment["artifactUrl"], archive)
        try:
            with open(archive, "rb") as stream:
                unpack(stream, folder / "app", max_bytes=ARTIFACT_MAX_BYTES, max_files=ARTIFACT_MAX_FILES)
        finally:
            archive.unlink(missing_ok=True)

    def image_pull(self, assignment: dict, report: dict):
        """The assignment's image pulled (or found in the cache) and ready to run, held in the cache as in use;
        what the pull did goes to `report` (for the deployment's log). In a PendingImage's thread."""
        spec = assignment["image"]
        if self.image_cache is None:
            self.image_cache = ImageCache(self.data_dir / "images", max_bytes=spec["cacheMaxBytes"])
        self.image_cache.max_bytes = spec["cacheMaxBytes"]
        check = oci.node_check(networks=spec.get("networks") or (), dns_servers=spec.get("dns") or (),
                               allow_http=bool(spec.get("allowHttp")))
        try:
            pulled = self.image_cache.pull(spec, check=check, max_bytes=spec["maxBytes"], max_layers=spec["maxLayers"],
                                           lines=report["lines"])
            pulled.image_root()  # a config that cannot run fails here, with the pull's lines
        except (ImageError, oci.RegistryError) as exc:
            report["error"] = str(exc)
            report["lines"].append(f"Error: {exc}")
            raise
        self.image_cache.in_use.add(pulled.digest)
        return pulled

    def _pulls_finished(self) -> bool:
        """Start the instances whose image is now pulled (or fail them with the reason); their pulls' lines go
        to the deployments' logs with this heartbeat. True when there were some."""
        finished = False
        for instance_id, pending in list(self.instances.items()):
            if not isinstance(pending, PendingImage) or not pending.done:
                continue
            del self.instances[instance_id]
            self.pulls.append(pending.report_of_pull)
            finished = True
            if pending.error:
                self.instances[instance_id] = FailedInstance(pending.assignment, pending.error)
                continue
            try:
                self._launch(pending.assignment, pending.pulled)
            except (Refused, SandboxUnavailable, OSError) as exc:
                logger.warning("agent: could not start %s: %s", instance_id, exc)
        return finished

    def image_released(self, digest: str) -> None:
        if self.image_cache is not None and not any(
                getattr(i, "pulled", None) is not None and i.pulled.digest == digest for i in self.instances.values()):
            self.image_cache.in_use.discard(digest)

    def start(self, assignment: dict):
        """Start an assigned instance: an image's once it is pulled (PendingImage), an artifact's now."""
        if assignment.get("image"):
            self.instances[assignment["instanceId"]] = PendingImage(self, assignment)
            return self.instances[assignment["instanceId"]]
        return self._launch(assignment)

    def _launch(self, assignment: dict, pulled=None) -> Instance:
        """Run the instance in its sandbox: an image's root (`pulled`), or the deployment's artifact."""
        folder = self.data_dir / "instances" / assignment["instanceId"]
        remove_tree(folder)
        folder.mkdir(parents=True)
        folder.chmod(0o711)
        listener = None
        try:
            if pulled is not None:
                (folder / "app").mkdir()
            else:
                self._artifact(assignment, folder)
            listener = socket.create_server((self.host, 0))
            inst = Instance(self, assignment, folder, listener, pulled=pulled)
        except BaseException:
            if listener is not None:
                listener.close()
            remove_tree(folder)
            if pulled is not None:
                self.image_released(pulled.digest)
            raise
        self.instances[inst.instance_id] = inst
        return inst

    # -- builds ---------------------------------------------------------------------------------------------
    def build_loop(self, stopping: threading.Event) -> None:
        link = HttpBuildLink(self.client)
        while not stopping.is_set():
            asked = time.monotonic()
            try:
                job = self.client.claim(wait=self.claim_wait)
            except httpx.HTTPError as exc:
                logger.warning("builder: claim failed (%s); retrying", exc)
                stopping.wait(2)
                continue
            if job is None and time.monotonic() - asked < self.claim_wait / 2:
                stopping.wait(2)  # the platform did not hold the claim (the node's other slots wait): never spin
            elif job is not None:
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

        def stop(*_):
            stopping.set()
            self.wake.set()

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        for slot in range(self.build_slots):
            threading.Thread(target=self.build_loop, args=(stopping,), name=f"build-{slot}", daemon=True).start()
        try:
            while not stopping.is_set():
                # in step with the platform, a heartbeat is a long poll: it ends early when there is something
                # to run or stop. What was just started or stopped is told at once, a starting instance's state
                # soon; while an image is pulled, or after a start that failed, the next heartbeat comes after
                # the interval, or as soon as a pull ends.
                long_poll, started = not (self.settling() or self._waiting()), time.monotonic()
                try:
                    self.step(wait=interval if long_poll else 0)
                except httpx.HTTPError as exc:
                    logger.warning("agent: heartbeat failed (%s); retrying", exc)
                    stopping.wait(interval)
                    continue
                if self.changed:
                    continue
                if self.settling():
                    self.wake.wait(SETTLE_POLL_SECONDS)
                elif self._waiting() or (long_poll and time.monotonic() - started < interval / 2):
                    self.wake.wait(interval)  # (the second: the platform did not hold the answer; never spin)
                self.wake.clear()
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
