"""The tunnel (P = /v1/orgs/{orgId}/projects/{projectId}; docs/tunnel.md): its state, start and stop, and the
WebSocket `manage.py tunnel` holds (`TUNNEL_CONNECT_PATH`, routed by config/asgi.py).

The WebSocket runs on the worker's event loop, never on a request thread: its database calls go to the holders'
few threads (`tunnel_relay.run_db`), requests arrive through the relay's inbox, answers leave through it."""
import asyncio
import contextlib
import json
import logging
import time
from dataclasses import asdict
from urllib.parse import parse_qs

from django.conf import settings
from django.urls import path
from rest_framework import serializers
from rest_framework.response import Response

from config.errors import ApplicationError
from config.ids import new_id
from config.inputs import InputSerializer, validated
from platform_app.api.base import PlatformView, endpoint, field_with_schema
from platform_app.services.resources import tunnels as services
from platform_app.services.resources.tunnel_relay import frame_pack, frame_unpack, inbox_for, run_db

logger = logging.getLogger(__name__)

STATUS = field_with_schema({"type": "string", "enum": ["stopped", "waiting", "connected"]})


class TunnelSerializer(serializers.Serializer):
    status = STATUS(help_text="`stopped` (no token), `waiting` (started, no client connected), `connected`")
    url = serializers.CharField(help_text="Where the tunnel is served: `<project>-tunnel.<DEPLOY_DOMAIN>`.")
    connected_since = serializers.DateTimeField(allow_null=True, help_text="Since when a client is connected.")
    bytes_in = serializers.IntegerField(help_text="Request bodies forwarded to the client since the last start.")
    bytes_out = serializers.IntegerField(help_text="Answer bodies the client sent back since the last start.")
    clients = serializers.IntegerField(help_text="Clients connected now (`manage.py tunnel` processes).")
    started_at = serializers.DateTimeField(allow_null=True)


class TunnelStartedSerializer(TunnelSerializer):
    token = serializers.CharField(help_text="For `manage.py tunnel --token`; shown only here. A new start "
                                            "replaces it.")
    command = serializers.CharField(help_text="The command that serves the tunnel from a developer's machine.")


class TunnelStartInput(InputSerializer):
    port = serializers.IntegerField(min_value=1, max_value=65535, default=services.DEFAULT_PORT,
                                    help_text="The local port, for `command` only.")


class TunnelView(PlatformView):
    @endpoint(scope="read", response=TunnelSerializer, summary="The project's tunnel")
    def get(self, request, org_id, project_id):
        return Response(TunnelSerializer(services.tunnel_state(project=self.project(project_id))).data)


class TunnelStartView(PlatformView):
    @endpoint(scope="admin", status=201, request=TunnelStartInput, response=TunnelStartedSerializer,
              summary="Start the tunnel (its token is shown once)",
              description="A new token every time: clients of the previous one are disconnected and refused. The "
                          "status is `waiting` until `manage.py tunnel` connects with it.")
    def post(self, request, org_id, project_id):
        v = validated(TunnelStartInput, request)
        project = self.project(project_id)
        state, token = services.tunnel_start(project=project, actor=request.user, ip=self.ip)
        body = {**asdict(state), "token": token,
                "command": services.tunnel_command(project=project, token=token, port=v["port"])}
        return Response(TunnelStartedSerializer(body).data, status=201)


class TunnelStopView(PlatformView):
    @endpoint(scope="admin", status=201, response=TunnelSerializer, summary="Stop the tunnel",
              description="Open connections are closed, the token no longer works, the address answers 503.")
    def post(self, request, org_id, project_id):
        state = services.tunnel_stop(project=self.project(project_id), actor=request.user, ip=self.ip)
        return Response(TunnelSerializer(state).data, status=201)


P = "orgs/<str:org_id>/projects/<str:project_id>"
urlpatterns = [
    path(f"{P}/tunnel", TunnelView.as_view()),
    path(f"{P}/tunnel/start", TunnelStartView.as_view()),
    path(f"{P}/tunnel/stop", TunnelStopView.as_view()),
]


# The WebSocket ------------------------------------------------------------------------------------------------

STOPPED = 4000  # close code: the tunnel was stopped or started again; the client gives up (its token is dead)


async def tunnel_connect(scope, receive, send):
    """`manage.py tunnel`'s WebSocket: `Authorization: Bearer <token>`, optionally `?project=<id or slug>`.
    Refused in the handshake with 401 and the platform's error body (a bad, replaced or stopped token)."""
    if (await receive())["type"] != "websocket.connect":
        return
    headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
    authorization = headers.get("authorization", "")
    token = authorization[7:].strip() if authorization[:7].lower() == "bearer " else ""
    project_ref = (parse_qs(scope.get("query_string", b"").decode("latin-1")).get("project") or [""])[0]
    client_ip = (scope.get("client") or (None,))[0]
    try:
        await run_db(services.tunnel_authenticate, token=token, project_ref=project_ref)
    except ApplicationError as exc:
        return await websocket_deny(scope, send, exc.status, exc.code, exc.message)
    except Exception:  # noqa: BLE001 - the database is away: the client tries again later
        logger.warning("tunnel handshake failed", exc_info=True)
        return await websocket_deny(scope, send, 503, "service_unavailable", "The tunnel cannot connect now.")
    connection_id = new_id("tcn")
    inbox = inbox_for(connection_id)
    try:
        await inbox.open()  # listening before the connection exists, so the edge never sends to nobody
        connection = await run_db(services.tunnel_connection_open, token=token, project_ref=project_ref,
                                  client_ip=client_ip, connection_id=connection_id)
    except ApplicationError as exc:  # stopped or restarted in between
        await inbox.close()
        return await websocket_deny(scope, send, exc.status, exc.code, exc.message)
    except Exception:  # noqa: BLE001 - Redis or the database is away: the client tries again later
        logger.warning("tunnel handshake failed", exc_info=True)
        await inbox.close()
        return await websocket_deny(scope, send, 503, "service_unavailable", "The tunnel cannot connect now.")
    except BaseException:
        await inbox.close()
        raise
    session = HolderSession(connection, inbox, receive, send)
    try:
        await send({"type": "websocket.accept"})
        await session.run()
    finally:
        await asyncio.shield(session.end())


async def websocket_deny(scope, send, status: int, code: str, message: str) -> None:
    """Refuse the handshake with an HTTP answer in the platform's error shape (ASGI's WebSocket denial response;
    a server without it answers 403)."""
    if "websocket.http.response" not in scope.get("extensions", {}):
        await send({"type": "websocket.close", "code": 1008, "reason": message[:120]})
        return
    body = json.dumps({"code": code, "message": message, "details": None, "status": status}).encode()
    headers = [(b"content-type", b"application/json")]
    if status == 401:
        headers.append((b"www-authenticate", b'Bearer realm="tunnel"'))
    await send({"type": "websocket.http.response.start", "status": status, "headers": headers})
    await send({"type": "websocket.http.response.body", "body": body})


def _clean_headers(value) -> list | None:
    if not isinstance(value, list) or len(value) > 200:
        return None
    pairs = []
    for pair in value:
        if not (isinstance(pair, list) and len(pair) == 2 and all(isinstance(x, str) for x in pair)):
            return None
        name, text = pair
        if not name or any(c in name for c in "\r\n:\x00 ") or any(c in text for c in "\r\n\x00"):
            return None
        pairs.append([name, text])
    return pairs


def _error_answer(request_id: str, status: int, text: str) -> bytes:
    return frame_pack({"type": "response", "id": request_id, "status": status,
                       "headers": [["content-type", "text/plain; charset=utf-8"]]}, text.encode())


class HolderSession:
    """One open WebSocket: requests from the inbox go down it, answers come up it and go back through the inbox;
    a heartbeat renews the connection row, writes the byte counters, and closes the socket once the tunnel was
    stopped or started again."""

    def __init__(self, connection, inbox, receive, send):
        self.connection, self.inbox, self.receive, self.send = connection, inbox, receive, send
        self.pending: dict[str, float] = {}  # request id → its deadline (time.time())
        self.bytes_in = self.bytes_out = 0
        self.closed = False

    async def run(self) -> None:
        project = self.connection.tunnel.project
        await self.send({"type": "websocket.send", "text": json.dumps({
            "type": "hello", "connectionId": self.connection.pk, "project": project.pk,
            "url": services.tunnel_url(project), "maxBodyBytes": settings.TUNNEL_MAX_BODY_BYTES,
            "answerTimeoutSeconds": settings.TUNNEL_ANSWER_TIMEOUT_SECONDS})})
        tasks = [asyncio.ensure_future(job()) for job in (self.read, self.pump, self.beat)]
        try:
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in tasks:
                task.cancel()
            results = await asyncio.gather(*tasks, return_exceptions=True)
        for result in results:
            if isinstance(result, Exception) and not isinstance(result, OSError):
                logger.warning("tunnel connection %s ended with an error", self.connection.pk, exc_info=result)

    async def close(self, code: int, reason: str) -> None:
        if not self.closed:
            self.closed = True
            with contextlib.suppress(OSError, RuntimeError):
                await self.send({"type": "websocket.close", "code": code, "reason": reason})

    async def read(self) -> None:
        """Answers from the client, until it goes."""
        while True:
            message = await self.receive()
            if message["type"] == "websocket.disconnect":
                self.closed = True
                return
            if message.get("bytes") is not None:
                await self.answered(message["bytes"])

    async def answered(self, data: bytes) -> None:
        try:
            head, body = frame_unpack(data)
        except ValueError:
            return
        request_id = head.get("id")
        if not isinstance(request_id, str) or self.pending.pop(request_id, None) is None:
            return  # late (the edge gave up), or not one of this connection's requests
        status, headers = head.get("status"), _clean_headers(head.get("headers"))
        if not (isinstance(status, int) and 100 <= status <= 599) or headers is None:
            frame = _error_answer(request_id, 502, "The tunnel client sent an answer that is not HTTP.")
        elif len(body) > settings.TUNNEL_MAX_BODY_BYTES:
            frame = _error_answer(request_id, 502, f"The answer is larger than the tunnel's limit "
                                                   f"({settings.TUNNEL_MAX_BODY_BYTES} bytes).")
        else:
            self.bytes_out += len(body)
            frame = frame_pack({"type": "response", "id": request_id, "status": status, "headers": headers}, body)
        try:
            await self.inbox.answer(request_id, frame)
        except Exception:  # noqa: BLE001 - the edge answers 502 when it waited in vain
            logger.warning("could not relay the answer to %s", request_id, exc_info=True)

    async def pump(self) -> None:
        """Requests from the relay, down the WebSocket (as they came: a frame)."""
        while not self.closed:
            for frame in await self.inbox.get(1.0):
                head, body = frame_unpack(frame)
                if head.get("type") == "close":
                    await self.close(STOPPED, "The tunnel was stopped or started again.")
                    return
                if head.get("type") != "request" or head.get("deadline", 0) < time.time():
                    continue  # the edge stopped waiting for it
                self.pending[head["id"]] = head["deadline"]
                self.bytes_in += len(body)
                await self.send({"type": "websocket.send", "bytes": frame})

    async def beat(self) -> None:
        while not self.closed:
            await asyncio.sleep(settings.TUNNEL_HEARTBEAT_SECONDS)
            counted, self.bytes_in, self.bytes_out = (self.bytes_in, self.bytes_out), 0, 0
            try:
                alive = await run_db(services.tunnel_connection_beat, connection=self.connection,
                                     bytes_in=counted[0], bytes_out=counted[1])
            except Exception:  # noqa: BLE001 - the database is away: keep serving, count again next time
                logger.warning("tunnel heartbeat failed", exc_info=True)
                self.bytes_in, self.bytes_out = self.bytes_in + counted[0], self.bytes_out + counted[1]
                continue
            if not alive:
                await self.close(STOPPED, "The tunnel was stopped or started again.")
                return
            now = time.time()
            for request_id in [r for r, deadline in self.pending.items() if deadline < now]:
                self.pending.pop(request_id, None)

    async def end(self) -> None:
        """After the socket: answer what is still waiting (502; without Redis its rows may go with the connection
        first: 503), stop listening, write the last counts, forget the connection."""
        try:
            for request_id in list(self.pending):
                await self.inbox.answer(request_id, _error_answer(request_id, 502, "The tunnel connection closed."))
            await self.inbox.close()
            await run_db(services.tunnel_connection_close, connection=self.connection, bytes_in=self.bytes_in,
                         bytes_out=self.bytes_out)
        except Exception:  # noqa: BLE001 - the row expires by itself (TUNNEL_CONNECTION_TTL_SECONDS)
            logger.warning("could not record the end of tunnel connection %s", self.connection.pk, exc_info=True)
