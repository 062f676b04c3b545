"""The node agent: joins with a single-use token, heartbeats, runs assigned deployments as supervised
processes on free ports, forwards their output, and stops what it is told to (or everything when leaving).

It reaches the platform over HTTP only. Artifacts are read from the platform's artifact folder, so an agent
runs on a machine that shares it (the local agent of `make run`).
"""
import collections
import os
import signal
import socket
import subprocess
import threading
import time
from dataclasses import dataclass, field

import httpx


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Process:
    instance_id: str
    popen: subprocess.Popen
    port: int
    lines: collections.deque = field(default_factory=lambda: collections.deque(maxlen=1000))

    def read(self):
        for raw in iter(self.popen.stdout.readline, b""):
            # NUL cannot be stored in a text column; the platform refuses it.
            self.lines.append(raw.decode("utf-8", errors="replace").rstrip("\n").replace("\0", "\ufffd"))

    def stop(self):
        try:
            os.killpg(self.popen.pid, signal.SIGTERM)
            self.popen.wait(timeout=5)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(self.popen.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.popen.wait()


class AgentRunner:
    def __init__(self, server: str, node_id: str, node_token: str):
        self.server, self.node_id = server.rstrip("/"), node_id
        self.http = httpx.Client(base_url=self.server, headers={"Authorization": f"Bearer {node_token}"}, timeout=15)
        self.processes: dict[str, Process] = {}

    @classmethod
    def join(cls, *, server: str, token: str, name: str, capacity: int = 4, host: str = "127.0.0.1"):
        resp = httpx.post(f"{server.rstrip('/')}/v1/agents/join", timeout=15,
                          json={"token": token, "name": name, "runtimes": ["process"], "capacity": capacity,
                                "host": host})
        resp.raise_for_status()
        body = resp.json()
        return cls(server, body["nodeId"], body["nodeToken"])

    def _reports(self) -> tuple[list, list]:
        reports, logs = [], []
        for proc in self.processes.values():
            code = proc.popen.poll()
            reports.append({"instanceId": proc.instance_id, "port": proc.port, "pid": proc.popen.pid,
                            "status": "running" if code is None else "failed",
                            "error": "" if code is None else f"exited with {code}"})
            if proc.lines:
                batch = [proc.lines.popleft() for _ in range(min(len(proc.lines), 200))]
                logs.append({"instanceId": proc.instance_id, "lines": batch})
        return reports, logs

    def step(self) -> dict:
        """One heartbeat: report, then start and stop to match the assignments."""
        reports, logs = self._reports()
        resp = self.http.post(f"/v1/agents/{self.node_id}/heartbeat", json={"instances": reports, "logs": logs})
        resp.raise_for_status()
        body = resp.json()
        wanted = {a["instanceId"]: a for a in body["assignments"]}
        for instance_id in [i for i in self.processes if i not in wanted or i in body["stop"]]:
            self.processes.pop(instance_id).stop()
        for instance_id, assignment in wanted.items():
            if instance_id not in self.processes:
                self.start(assignment)
        return body

    def start(self, assignment: dict) -> Process:
        port = free_port()
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/tmp"),
               "LANG": "C.UTF-8", "PYTHONUNBUFFERED": "1",
               **{pair["key"]: pair["value"] for pair in assignment["env"]}, "PORT": str(port)}
        popen = subprocess.Popen(["/bin/sh", "-c", assignment["startCommand"]], cwd=assignment["artifact"], env=env,
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
        proc = Process(assignment["instanceId"], popen, port)
        threading.Thread(target=proc.read, daemon=True).start()
        self.processes[proc.instance_id] = proc
        return proc

    def leave(self) -> None:
        for proc in self.processes.values():
            proc.stop()
        self.processes.clear()
        self.http.post(f"/v1/agents/{self.node_id}/leave")

    def run_forever(self, interval: float = 2.0) -> None:
        stopping = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stopping.set())
        signal.signal(signal.SIGINT, lambda *_: stopping.set())
        try:
            while not stopping.is_set():
                try:
                    self.step()
                except httpx.HTTPError as exc:
                    print(f"agent: heartbeat failed ({exc}); retrying", flush=True)
                stopping.wait(interval)
        finally:
            self.leave()
