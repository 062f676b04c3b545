"""The tunnel with real processes: the production server (gunicorn, two uvicorn workers, so the WebSocket and a
request often live in different processes), `manage.py tunnel` and a local `python -m http.server`, on a scratch
database, once relayed through the database and once through a redis-server of the test's own. A file comes back
through `<slug>-tunnel.localhost`; the client rides out a restart of the server; stop through the API makes the
address 503 and the client give up; a bad token is refused. Slow: `pytest -m slow`."""
import httpx
import pytest

from tests.processes import (ROOT, PYTHON, Process, RedisServer, WebServer, child_env, django_script, free_port,
                             manage, redis_server_path, wait_until)
from tests.scratch_database import migrated_database

pytestmark = pytest.mark.slow

FILE = "hello from the laptop\n"
SEED = """
import json
from platform_app.models import User
from platform_app.services.identity.tokens import api_token_create
from platform_app.services.projects.projects import project_create_from_image
from platform_app.services.teams.workspaces import workspace_create

user = User.objects.create_user(email="tunnel@example.com", password="tunnel-password-2026", name="Tunnel")
workspace = workspace_create(user=user, name="Tunnel", slug="tunnel-live")
_, token = api_token_create(user=user, name="live", scopes=["admin"], expires=None, workspace=workspace)
project = project_create_from_image(workspace=workspace, actor=user, name="Shop", image_ref="nginx:1.27", slug="shop")
print(json.dumps({"org": workspace.pk, "token": token, "project": project.pk}))
"""


class TwoWorkers(WebServer):
    """The production server with two uvicorn workers."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.argv[self.argv.index("--workers") + 1] = "2"


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("tunnel") / "data"
    data_dir.mkdir()
    with migrated_database(data_dir) as database:
        yield database


@pytest.fixture(params=["database", "redis"])
def platform(request, scratch, tmp_path):
    started = []
    redis_url = None
    if request.param == "redis":
        if not redis_server_path():
            pytest.skip("redis-server is not installed")
        redis = RedisServer(log_dir=tmp_path).start()
        started.append(redis)
        redis_url = redis.url()
    port = free_port()
    env = child_env(data_dir=scratch.data_dir, database_url=scratch.url(), redis_url=redis_url,
                    DEPLOY_DOMAIN="localhost", DEPLOY_PORT=port, SITE_URL=f"http://127.0.0.1:{port}",
                    TUNNEL_HEARTBEAT_SECONDS=0.5)
    manage(env, "flush", "--noinput")  # each run seeds the same names
    seeded = django_script(env, SEED)
    web = TwoWorkers(env=env, log_dir=tmp_path, port=port)
    started.append(web)
    folder = tmp_path / "www"
    folder.mkdir()
    (folder / "file.txt").write_text(FILE)
    site_port = free_port()
    site = Process("site", [PYTHON, "-m", "http.server", site_port, "--bind", "127.0.0.1", "--directory", folder],
                   env=env, log_dir=tmp_path, cwd=ROOT).start()
    started.append(site)
    try:
        web.start()
        yield {"env": env, "web": web, "site_port": site_port, "log_dir": tmp_path, "started": started, **seeded}
    finally:
        for process in reversed(started):
            process.stop()
        print("\n".join(f"--- {p.name} ---\n{p.log_tail(60)}" for p in started if isinstance(p, Process)))


def api(p, method: str, rest: str = ""):
    url = f"{p['web'].url}/v1/orgs/{p['org']}/projects/{p['project']}/tunnel{rest}"
    return httpx.request(method, url, headers={"Authorization": f"Bearer {p['token']}"}, timeout=30, trust_env=False)


def through(p, path: str = "/file.txt") -> httpx.Response:
    return httpx.get(p["web"].url + path, headers={"Host": "shop-tunnel.localhost"}, timeout=60, trust_env=False)


def tunnel_process(p, token: str, name: str = "tunnel") -> Process:
    process = Process(name, [PYTHON, "manage.py", "tunnel", "--server", p["web"].url, "--project", p["project"],
                             "--port", p["site_port"], "--token", token], env=p["env"], log_dir=p["log_dir"])
    p["started"].append(process)
    return process.start()


def test_a_file_comes_through_the_tunnel_until_it_is_stopped(platform):
    p = platform
    assert api(p, "GET").json()["status"] == "stopped"
    assert through(p).status_code == 503
    started = api(p, "POST", "/start")
    assert started.status_code == 201
    token = started.json()["token"]
    assert started.json()["status"] == "waiting"

    client = tunnel_process(p, token)
    client.wait_for_log("Forwarding http://shop-tunnel.localhost:", timeout=60)
    wait_until(lambda: api(p, "GET").json()["status"] == "connected", timeout=30, what="connected", logs=[client])
    answers = [through(p) for _ in range(12)]  # two workers: some reach the one without the WebSocket
    assert [(a.status_code, a.text) for a in answers] == [(200, FILE)] * 12
    assert through(p, "/nothing-here").status_code == 404
    state = wait_until(lambda: (s := api(p, "GET").json())["bytesOut"] >= 12 * len(FILE) and s, timeout=30,
                       what="the byte counters", logs=[client])
    assert state["clients"] == 1 and state["connectedSince"]

    # the server restarts (a deploy): the client connects again by itself
    mark = len(client.log_text())
    p["web"].stop()
    p["web"].start()
    client.wait_for_log("Forwarding", after=mark, timeout=90)
    wait_until(lambda: through(p).status_code == 200, timeout=30, what="the tunnel after the restart",
               logs=[client, p["web"]])
    assert through(p).text == FILE

    stopped = api(p, "POST", "/stop")
    assert stopped.status_code == 201 and stopped.json()["status"] == "stopped"
    gone = through(p)
    assert gone.status_code == 503 and gone.text == "Tunnel not connected."
    wait_until(lambda: not client.alive, timeout=30, what="the client to give up", logs=[client])
    assert client.popen.returncode != 0 and "The tunnel was stopped" in client.log_text()


def test_a_bad_token_is_refused(platform):
    p = platform
    api(p, "POST", "/start")
    client = tunnel_process(p, "svct_not-the-token", name="bad-tunnel")
    wait_until(lambda: not client.alive, timeout=60, what="the client to give up", logs=[client])
    assert client.popen.returncode != 0
    assert "refused the tunnel (401)" in client.log_text()
    state = api(p, "GET").json()
    assert state["status"] == "waiting" and state["clients"] == 0
    assert through(p).status_code == 503
