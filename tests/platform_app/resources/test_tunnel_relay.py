"""A tunnel serving requests end to end in the test process: the ASGI application (config/asgi.py) under a real
uvicorn server on a thread, the client of `manage.py tunnel` (TunnelClient) on another, and a local HTTP server
(http.server) on a third. Each runs once through the database relay (no Redis, as `make run`) and once through
Redis. tests/platform_app/resources/test_tunnel_live.py does the same with the production server and the command
as real processes."""
import asyncio
import http.server
import json
import os
import threading

import httpx
import pytest

from platform_app.management.commands.tunnel import Refused, TunnelClient
from platform_app.models import Tunnel, TunnelConnection, TunnelRequest
from tests.platform_app.projects.factories import ProjectFactory
from tests.processes import free_port, wait_until

pytestmark = pytest.mark.django_db(transaction=True)

FILE = b"hello from the laptop\n"
HOST = "shop-tunnel.localhost"
REDIS = os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/12"


class LocalSite(http.server.BaseHTTPRequestHandler):
    """The developer's server: a file with two cookies, an echo of what arrived."""

    def do_GET(self):
        if self.path != "/file.txt":
            return self.send_error(404)
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Set-Cookie", "a=1; Path=/")
        self.send_header("Set-Cookie", "b=2; Path=/; HttpOnly")
        self.send_header("Content-Length", str(len(FILE)))
        self.end_headers()
        self.wfile.write(FILE)

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        answer = json.dumps({"path": self.path, "body": body.decode(), "headers": dict(self.headers)}).encode()
        self.send_response(201)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args):
        pass


class ServerThread:
    """config.asgi.application under uvicorn (WebSockets by the `websockets` package, as in production)."""

    def __init__(self):
        import uvicorn

        from config.asgi import application

        self.port = free_port()
        self.server = uvicorn.Server(uvicorn.Config(application, host="127.0.0.1", port=self.port, lifespan="off",
                                                    loop="asyncio", log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self):
        self.thread.start()
        wait_until(lambda: self.server.started, timeout=30, what="uvicorn to start")
        return self

    def stop(self):
        self.server.should_exit = True
        self.thread.join(timeout=30)


class ClientThread:
    """`manage.py tunnel`'s client on a loop of its own; `refused` says why it gave up, if it did."""

    def __init__(self, **options):
        self.lines: list[str] = []
        self.client = TunnelClient(out=self.lines.append, **options)
        self.refused = None
        self.loop = asyncio.new_event_loop()
        self.task = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        asyncio.set_event_loop(self.loop)
        self.task = self.loop.create_task(self.client.run())
        try:
            self.loop.run_until_complete(self.task)
        except Refused as exc:
            self.refused = str(exc)
        except asyncio.CancelledError:
            pass
        finally:
            self.loop.close()

    def stop(self):
        if self.thread.is_alive():
            self.loop.call_soon_threadsafe(self.task.cancel)
        self.thread.join(timeout=30)


@pytest.fixture(params=["database", "redis"])
def relay(request, settings):
    settings.TUNNEL_HEARTBEAT_SECONDS, settings.TUNNEL_POLL_SECONDS = 0.2, 0.02
    if request.param == "database":
        settings.REDIS_URL = ""
        yield request.param
        return
    import redis

    client = redis.Redis.from_url(REDIS, socket_connect_timeout=1)
    try:
        client.ping()
    except redis.RedisError:
        pytest.skip(f"no Redis at {REDIS}")
    settings.REDIS_URL = REDIS
    yield request.param
    for key in client.scan_iter("tunnel:*"):
        client.delete(key)


@pytest.fixture
def server():
    server = ServerThread().start()
    yield server
    server.stop()


@pytest.fixture
def site():
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), LocalSite)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd.server_address[1]
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def project(workspace):
    return ProjectFactory(workspace=workspace, name="Shop", slug="shop")


def api(project, rest=""):
    return f"/v1/orgs/acme/projects/{project.pk}/tunnel{rest}"


def through(server, method="GET", path="/file.txt", **kwargs) -> httpx.Response:
    with httpx.Client(trust_env=False, timeout=60) as http:
        return http.request(method, server.url + path, headers={"Host": HOST, **kwargs.pop("headers", {})}, **kwargs)


def state(client, project) -> dict:
    return client.get(api(project)).json()


def test_a_tunnel_serves_a_local_server_through_the_edge_until_stopped(relay, server, site, alice_client, project):
    token = alice_client.post(api(project, "/start")).json()["token"]
    tunnel = ClientThread(server=server.url, token=token, port=site, project=project.pk)
    try:
        connected = wait_until(lambda: (s := state(alice_client, project))["status"] == "connected" and s,
                               timeout=30, what="the client to connect")
        assert connected["clients"] == 1 and connected["connectedSince"]

        got = through(server)
        assert got.status_code == 200 and got.content == FILE
        assert got.headers["content-type"] == "text/plain"
        assert sorted(c.split(";")[0] for c in got.headers.get_list("set-cookie")) == ["a=1", "b=2"]

        posted = through(server, "POST", "/echo?x=1", content=b"name=value", headers={"X-Custom": "yes"})
        assert posted.status_code == 201
        echo = posted.json()
        assert echo["path"] == "/echo?x=1" and echo["body"] == "name=value"
        assert echo["headers"]["X-Custom"] == "yes" and echo["headers"]["X-Forwarded-Host"] == HOST
        assert echo["headers"]["X-Forwarded-Proto"] == "http" and echo["headers"]["X-Forwarded-For"] == "127.0.0.1"
        assert through(server, path="/missing").status_code == 404

        counted = wait_until(lambda: (s := state(alice_client, project))["bytesOut"] > len(FILE) and s, timeout=30,
                             what="the byte counters")
        assert counted["bytesIn"] == len(b"name=value") and counted["bytesOut"] >= len(FILE) + len(posted.content)
        assert not TunnelRequest.objects.exists()

        assert alice_client.post(api(project, "/stop")).status_code == 201
        stopped = through(server)
        assert stopped.status_code == 503 and stopped.text == "Tunnel not connected."
        tunnel.thread.join(timeout=30)
        assert tunnel.refused == "The tunnel was stopped or started again."
        assert not TunnelConnection.objects.exists()
    finally:
        tunnel.stop()
    assert any(line.startswith("GET /file.txt 200") for line in tunnel.lines)


def test_a_client_that_leaves_makes_the_tunnel_wait_again(relay, server, site, alice_client, project):
    token = alice_client.post(api(project, "/start")).json()["token"]
    tunnel = ClientThread(server=server.url, token=token, port=site)
    wait_until(lambda: state(alice_client, project)["status"] == "connected", timeout=30, what="a connection")
    tunnel.stop()
    wait_until(lambda: state(alice_client, project)["status"] == "waiting", timeout=30, what="the connection to end")
    assert through(server).status_code == 503
    assert tunnel.refused is None


def test_a_client_that_does_not_answer_is_502(relay, server, alice_client, project, settings):
    from websockets.sync.client import connect

    settings.TUNNEL_ANSWER_TIMEOUT_SECONDS = 1.0
    token = alice_client.post(api(project, "/start")).json()["token"]
    with connect(server.url.replace("http", "ws") + "/v1/tunnel/connect",
                 additional_headers={"Authorization": f"Bearer {token}"}) as ws:
        hello = json.loads(ws.recv(timeout=10))
        assert hello["type"] == "hello" and hello["project"] == project.pk
        assert hello["url"] == "http://shop-tunnel.localhost:8000/"
        wait_until(lambda: state(alice_client, project)["status"] == "connected", timeout=30, what="a connection")
        resp = through(server, path="/slow")
        assert resp.status_code == 502 and resp.text == "The tunnel client did not answer in time."
        from platform_app.services.resources.tunnel_relay import frame_unpack

        head, body = frame_unpack(ws.recv(timeout=10))
        assert (head["type"], head["method"], head["path"], body) == ("request", "GET", "/slow", b"")
    assert not TunnelRequest.objects.exists()


def test_a_connection_whose_process_died_is_503(relay, project, settings):
    """Seen recently, but nobody holds it: with Redis nobody receives the publish, without it nobody claims the row
    within TUNNEL_CLAIM_TIMEOUT_SECONDS. Either way 503, and nothing is left behind."""
    from django.test import Client

    from tests.platform_app.resources.tunnel_factories import TunnelConnectionFactory, TunnelFactory

    settings.TUNNEL_CLAIM_TIMEOUT_SECONDS = 0.2
    connection = TunnelConnectionFactory(tunnel=TunnelFactory(project=project))
    assert Client().get("/file.txt", HTTP_HOST=HOST).status_code == 503
    assert not TunnelRequest.objects.exists()
    if relay == "redis":
        import redis

        assert not redis.Redis.from_url(REDIS).exists(f"tunnel:inbox:{connection.pk}")


def test_bad_tokens_are_refused_in_the_handshake(server, project, settings):
    from websockets.exceptions import InvalidStatus
    from websockets.sync.client import connect

    settings.REDIS_URL = ""
    Tunnel.objects.create(project=project, token_hash="0" * 64)
    endpoint = server.url.replace("http", "ws") + "/v1/tunnel/connect"
    for headers in ({"Authorization": "Bearer svct_not-a-token"}, {}):
        with pytest.raises(InvalidStatus) as refused:
            connect(endpoint, additional_headers=headers)
        assert refused.value.response.status_code == 401
        body = json.loads(refused.value.response.body)
        assert body["code"] == "invalid_token" and body["status"] == 401 and set(body) == {"code", "message",
                                                                                            "details", "status"}
    with pytest.raises(InvalidStatus) as unknown:
        connect(server.url.replace("http", "ws") + "/v1/elsewhere")
    assert unknown.value.response.status_code == 404

    client = ClientThread(server=server.url, token="svct_not-a-token", port=9)
    client.thread.join(timeout=30)
    assert client.refused.startswith("The platform refused the tunnel (401): This tunnel token is not valid")
    assert not TunnelConnection.objects.exists()
