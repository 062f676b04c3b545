"""A node's only way to the platform: its HTTP API, with the node's own token (and a build job's token).

Routes (docs/isolation.md): `POST /v1/agents/join`, `/v1/agents/{node}/heartbeat`, `/leave`,
`/builds/claim` (long poll), `GET /v1/agents/{node}/artifacts/{deployment}`; per build job
`GET /v1/builds/{deployment}/source`, `POST .../logs`, `PUT .../artifact`, `POST .../finish`.
"""
import time
from pathlib import Path

import httpx

from platform_app.nodes.builder import BuildFailed, BuildLink, log_batches


class PlatformClient:
    """The node's session with the platform."""

    def __init__(self, server: str, node_id: str, node_token: str, *, timeout: float = 30.0):
        self.server, self.node_id = server.rstrip("/"), node_id
        self.http = httpx.Client(base_url=self.server, headers={"Authorization": f"Bearer {node_token}"},
                                 timeout=timeout, trust_env=False)

    @classmethod
    def join(cls, *, server: str, token: str, name: str, capabilities: list[str], capacity: int, host: str,
             sandbox: dict) -> "PlatformClient":
        resp = httpx.post(f"{server.rstrip('/')}/v1/agents/join", timeout=15, trust_env=False,
                          json={"token": token, "name": name, "runtimes": capabilities, "capacity": capacity,
                                "host": host, "sandbox": sandbox})
        resp.raise_for_status()
        body = resp.json()
        return cls(server, body["nodeId"], body["nodeToken"])

    def heartbeat(self, payload: dict, wait: float = 0.0) -> dict:
        """Report; the answer (what to run and stop) comes at once when it asks something new, else within
        `wait` seconds."""
        resp = self.http.post(f"/v1/agents/{self.node_id}/heartbeat", json={**payload, "wait": wait},
                              timeout=wait + 30)
        resp.raise_for_status()
        return resp.json()

    def leave(self) -> None:
        self.http.post(f"/v1/agents/{self.node_id}/leave")

    def claim(self, wait: float = 20.0) -> dict | None:
        """The next build job for this node, waiting up to `wait` seconds for one; None when there is none."""
        resp = self.http.post(f"/v1/agents/{self.node_id}/builds/claim", json={"wait": wait},
                              timeout=wait + 30)
        resp.raise_for_status()
        return resp.json() if resp.status_code == 200 else None

    def download_artifact(self, url: str, dest: Path) -> None:
        """A deployment's archive (the platform answers it, or redirects to object storage) into `dest`."""
        with self.http.stream("GET", url, follow_redirects=True, timeout=300) as resp:
            resp.raise_for_status()
            with open(dest, "wb") as out:
                # raw: object storage labels a .tar.gz `Content-Encoding: gzip`, which must not be undone here
                for chunk in resp.iter_raw(1 << 20):
                    out.write(chunk)


RETRY_SECONDS = 60  # a build rides out a platform restart this long before giving up


def _retrying(call):
    """`call()`, again while the platform cannot be reached or answers 502/503/504 (a deploy of the platform, a
    restarting web process), for up to RETRY_SECONDS."""
    deadline, pause = time.monotonic() + RETRY_SECONDS, 0.5
    while True:
        try:
            resp = call()
            if resp.status_code not in (502, 503, 504):
                return resp
        except (httpx.ConnectError, httpx.ConnectTimeout, httpx.RemoteProtocolError, httpx.ReadError):
            if time.monotonic() > deadline:
                raise
        if time.monotonic() > deadline:
            return resp
        time.sleep(pause)
        pause = min(pause * 2, 5)


class HttpBuildLink(BuildLink):
    """A build job's routes, authenticated by the job's token (valid while the build runs)."""

    def __init__(self, client: PlatformClient):
        self.client = client

    def _auth(self, job: dict) -> dict:
        return {"Authorization": f"Bearer {job['token']}"}

    def fetch_source(self, job: dict, dest: Path) -> None:
        with self.client.http.stream("GET", f"/v1/builds/{job['id']}/source", headers=self._auth(job),
                                     timeout=300) as resp:
            resp.raise_for_status()
            with open(dest, "wb") as out:
                for chunk in resp.iter_raw(1 << 20):
                    out.write(chunk)

    def log(self, job: dict, lines: list[tuple[str, str]]) -> bool:
        stop = False
        for batch in log_batches(lines):
            stop = self._log_batch(job, batch) or stop
        return stop

    def _log_batch(self, job: dict, lines: list[tuple[str, str]]) -> bool:
        body = {"lines": [{"stream": s, "text": t} for s, t in lines]}
        resp = _retrying(lambda: self.client.http.post(f"/v1/builds/{job['id']}/logs", headers=self._auth(job),
                                                       json=body))
        if resp.status_code == 413 and len(lines) > 1:  # a platform with a lower body limit: halves until they fit
            half = len(lines) // 2
            return self._log_batch(job, lines[:half]) | self._log_batch(job, lines[half:])
        resp.raise_for_status()
        return bool(resp.json().get("canceled"))

    def upload(self, job: dict, archive: Path) -> None:
        def put():
            with open(archive, "rb") as body:
                return self.client.http.put(f"/v1/builds/{job['id']}/artifact", content=body, timeout=300,
                                            headers={**self._auth(job), "Content-Type": "application/octet-stream",
                                                     "Content-Length": str(archive.stat().st_size)})

        resp = _retrying(put)
        if resp.status_code == 400:  # the platform's own check refused it (and ended the deployment)
            raise BuildFailed(resp.json().get("message") or "The output was refused.")
        resp.raise_for_status()

    def finish(self, job: dict, status: str, message: str, sandbox: dict) -> None:
        body = {"status": status, "message": message[:2000], "sandbox": sandbox}
        resp = _retrying(lambda: self.client.http.post(f"/v1/builds/{job['id']}/finish", headers=self._auth(job),
                                                       json=body))
        resp.raise_for_status()
