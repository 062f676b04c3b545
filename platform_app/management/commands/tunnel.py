"""`manage.py tunnel --server URL --project <id> --port 3000 --token <token>`: serve the project's tunnel,
`<project>-tunnel.<DEPLOY_DOMAIN>`, from a port of this machine (docs/tunnel.md).

It holds one WebSocket to the platform (`/v1/tunnel/connect`, `Authorization: Bearer <token>`; the token names the
project and its workspace, `--project` only double-checks), forwards each request that comes down it to
`http://127.0.0.1:<port>` and sends the answer back (status, headers, body as the local server sent it). A cut
connection is opened again with backoff (0.5 s doubling to 30 s); a refused token (401), or a tunnel stopped or
started again meanwhile, ends the command with an error. It reads none of the platform's settings beyond the
default `--server` (SITE_URL).
"""
import asyncio
import json
import os
import random
import time
from urllib.parse import urlencode, urlsplit, urlunsplit

import httpx
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from platform_app.services.resources.tunnel_relay import frame_pack, frame_unpack

CONNECT_PATH = "/v1/tunnel/connect"
BACKOFF_FIRST, BACKOFF_MAX = 0.5, 30.0
CONCURRENCY = 16  # requests forwarded at once; more wait in the WebSocket
STOPPED = 4000  # the platform's close code for a tunnel stopped or started again
# Not forwarded in either direction: they describe one hop (the platform's or the local server's connection).
HOP_HEADERS = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "proxy-authorization",
               "proxy-authenticate", "host", "content-length"}


class Refused(Exception):
    """The platform will not take this token (any more): trying again cannot help."""


def _text(status: int, message: str) -> tuple[int, list, bytes]:
    return status, [["content-type", "text/plain; charset=utf-8"]], message.encode()


class TunnelClient:
    """The client side of a tunnel. `run()` serves until cancelled or refused (Refused)."""

    def __init__(self, *, server: str, token: str, port: int, project: str = "", out=print):
        self.server, self.token, self.port, self.project, self.out = server.rstrip("/"), token, port, project, out
        self.max_body = 1024 * 1024  # until the platform's hello says otherwise
        self.answer_timeout = 30.0
        self.connected = asyncio.Event()  # set while a connection is open (tests wait on it)
        self.http: httpx.AsyncClient | None = None

    def connect_url(self) -> str:
        parts = urlsplit(self.server)
        scheme = "wss" if parts.scheme == "https" else "ws"
        query = urlencode({"project": self.project}) if self.project else ""
        return urlunsplit((scheme, parts.netloc, parts.path.rstrip("/") + CONNECT_PATH, query, ""))

    async def run(self) -> None:
        delay = BACKOFF_FIRST
        async with httpx.AsyncClient(trust_env=False, follow_redirects=False) as self.http:
            while True:
                try:
                    await self.session()
                    delay = BACKOFF_FIRST  # it was up: the next attempt comes soon
                    self.out("connection closed; connecting again")
                except Refused:
                    raise
                except Exception as exc:  # noqa: BLE001 - the platform is away or restarting: try again later
                    self.out(f"could not connect ({exc.__class__.__name__}: {exc}); again in {delay:.1f} s")
                await asyncio.sleep(delay * random.uniform(0.8, 1.2))
                delay = min(delay * 2, BACKOFF_MAX)

    async def session(self) -> None:
        """One connection, until it ends."""
        from websockets.asyncio.client import connect
        from websockets.exceptions import ConnectionClosed, InvalidStatus

        try:
            ws = await connect(self.connect_url(), additional_headers={"Authorization": f"Bearer {self.token}"},
                               max_size=64 * 1024 * 1024, open_timeout=15, ping_interval=20, ping_timeout=20,
                               close_timeout=5, user_agent_header="svc-tunnel/1")
        except InvalidStatus as exc:
            status = exc.response.status_code
            if status in (401, 403, 404):
                try:
                    message = json.loads(exc.response.body)["message"]
                except (ValueError, KeyError, TypeError):
                    message = (exc.response.body or b"").decode(errors="replace")[:200]
                raise Refused(f"The platform refused the tunnel ({status}): {message}") from exc
            raise
        tasks: set[asyncio.Task] = set()
        limit = asyncio.Semaphore(CONCURRENCY)
        try:
            hello = json.loads(await ws.recv())
            self.max_body = int(hello.get("maxBodyBytes", self.max_body))
            self.answer_timeout = float(hello.get("answerTimeoutSeconds", self.answer_timeout))
            self.out(f"Forwarding {hello.get('url')} → http://127.0.0.1:{self.port}")
            self.connected.set()
            async for message in ws:
                if isinstance(message, bytes):
                    await limit.acquire()
                    task = asyncio.ensure_future(self.handle(ws, message))
                    tasks.add(task)
                    task.add_done_callback(lambda t: (tasks.discard(t), limit.release()))
        except ConnectionClosed:
            pass
        finally:
            self.connected.clear()
            for task in list(tasks):
                task.cancel()
            await ws.close()
        if ws.close_code == STOPPED:
            raise Refused(ws.close_reason or "The tunnel was stopped.")

    async def handle(self, ws, frame: bytes) -> None:
        head, body = frame_unpack(frame)
        started = time.monotonic()
        status, headers, content = await self.forward(head, body)
        try:
            await ws.send(frame_pack({"type": "response", "id": head["id"], "status": status, "headers": headers},
                                     content))
        except Exception:  # noqa: BLE001 - the connection went: the platform answers 502 for it
            return
        self.out(f"{head.get('method')} {head.get('path')} {status} {int((time.monotonic() - started) * 1000)} ms")

    async def forward(self, head: dict, body: bytes) -> tuple[int, list, bytes]:
        """The local server's answer to one request: (status, headers, body), or a 502/504 of our own."""
        url = f"http://127.0.0.1:{self.port}{head.get('path') or '/'}"
        headers = [(k, v) for k, v in head.get("headers", []) if k.lower() not in HOP_HEADERS]
        deadline = head.get("deadline") or time.time() + self.answer_timeout
        timeout = max(0.5, deadline - time.time() - 0.5)  # answer before the platform stops waiting
        try:
            async with self.http.stream(head.get("method", "GET"), url, headers=headers, content=body or None,
                                        timeout=timeout) as response:
                chunks, size = [], 0
                async for chunk in response.aiter_raw():  # as sent: a compressed body stays compressed
                    size += len(chunk)
                    if size > self.max_body:
                        return _text(502, f"The answer is larger than the tunnel's limit ({self.max_body} bytes).")
                    chunks.append(chunk)
                kept = [[k, v] for k, v in response.headers.multi_items() if k.lower() not in HOP_HEADERS]
                return response.status_code, kept, b"".join(chunks)
        except httpx.TimeoutException:
            return _text(504, f"The local server on port {self.port} did not answer in time.")
        except httpx.HTTPError as exc:
            return _text(502, f"Nothing answered on http://127.0.0.1:{self.port} ({exc.__class__.__name__}).")


class Command(BaseCommand):
    help = "Serve the project's tunnel (<project>-tunnel.<DEPLOY_DOMAIN>) from a local port."

    def add_arguments(self, parser):
        parser.add_argument("--server", default=settings.SITE_URL, help="the platform's address (default: SITE_URL)")
        parser.add_argument("--project", default="", help="the project's id or slug (checked against the token)")
        parser.add_argument("--port", type=int, required=True, help="the local port to expose")
        parser.add_argument("--token", default=os.environ.get("TUNNEL_TOKEN", ""),
                            help="the token `POST .../tunnel/start` showed (or TUNNEL_TOKEN)")

    def handle(self, *args, server, project, port, token, **options):
        import logging

        if not token:
            raise CommandError("Give --token <token> (or TUNNEL_TOKEN): start the tunnel to get one.")
        if not 0 < port < 65536:
            raise CommandError("--port must be a TCP port (1-65535).")
        logging.getLogger("httpx").setLevel(logging.WARNING)
        logging.getLogger("websockets").setLevel(logging.WARNING)

        def out(line: str) -> None:
            self.stdout.write(line)
            self.stdout.flush()

        client = TunnelClient(server=server, token=token, port=port, project=project, out=out)
        try:
            asyncio.run(client.run())
        except Refused as exc:
            raise CommandError(str(exc))
        except KeyboardInterrupt:
            pass
