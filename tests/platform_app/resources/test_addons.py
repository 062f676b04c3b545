"""Add-ons for real: a PostgreSQL database and a Redis key space made on the machine's own servers, reached by a
project's build and its app (through a node agent and the edge) with the managed variables, and by nothing else:
the node's guard keeps each connection to the add-on's own role or user."""
import textwrap
import time

import httpx
import pytest
from django.conf import settings

from platform_app.models import Addon
from platform_app.services.agents.agents import agent_invite_create
from tests.platform_app.sandbox.conftest import deploy, log_text

APP = textwrap.dedent('''\
    import glob, os, subprocess
    from wsgiref.simple_server import make_server

    PSQL = sorted(glob.glob("/usr/lib/postgresql/*/bin/psql"))[-1]

    def run(*argv):
        done = subprocess.run(argv, capture_output=True, text=True)
        return (done.stdout + done.stderr).strip()

    def app(environ, start):
        path, url = environ["PATH_INFO"], os.environ.get("DATABASE_URL", "")
        if path == "/":
            body = run(PSQL, url, "-tAc", "select note from notes")
        elif path == "/whoami":
            body = run(PSQL, url, "-tAc", "select current_user || ' ' || current_database()")
        elif path == "/as-superuser":  # the same address, asking for another role and database
            port = url.rsplit(":", 1)[1].split("/")[0]
            body = run(PSQL, f"postgres://postgres@127.0.0.1:{port}/postgres", "-tAc", "select 1")
        elif path == "/redis":
            cli = ["redis-cli", "--no-auth-warning", "-u", os.environ["REDIS_URL"]]
            prefix = os.environ["REDIS_KEY_PREFIX"]
            body = " | ".join([run(*cli, "SET", prefix + "k", "kept"), run(*cli, "GET", prefix + "k"),
                               run(*cli, "SET", "other:k", "x"), run(*cli, "FLUSHALL"),
                               run(*cli, "AUTH", "default", ""), run(*cli, "GET", prefix + "k")])
        else:
            body = "?"
        start("200 OK", [("Content-Type", "text/plain")])
        return [body.encode()]

    make_server("0.0.0.0", int(os.environ["PORT"]), app).serve_forever()
    ''')
PSQL = "$(ls /usr/lib/postgresql/*/bin/psql | tail -1)"


def _add(client, project, kind, **body):
    """Create an add-on and run its provisioning (a task, once the request's transaction commits); its state."""
    from django.test.testcases import TestCase

    with TestCase.captureOnCommitCallbacks(execute=True):
        resp = client.post(f"/v1/orgs/acme/projects/{project.pk}/addons", {"kind": kind, **body}, format="json")
    assert resp.status_code == 201, resp.content
    assert resp.json()["status"] == "provisioning"
    return next(a for a in client.get(f"/v1/orgs/acme/projects/{project.pk}/addons").json()["items"]
                if a["id"] == resp.json()["id"])


@pytest.mark.django_db
def test_a_postgres_addon_is_made_listed_and_its_variable_managed(alice_client, as_user, charlie, make_project,
                                                                   pg_server):
    project = make_project("with-db", {"index.html": "x"})
    body = _add(alice_client, project, "postgres")
    assert body["kind"] == "postgres" and body["status"] == "ready" and body["envVars"] == ["DATABASE_URL"]
    assert "password" not in str(body) and "postgres://" not in str(body)
    role = f"{settings.ADDONS_NAME_PREFIX}{body['id'][4:].lower()}"
    owner = pg_server.execute("SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = %s", [role]).fetchone()
    assert owner == (role,)  # a database of its own, owned by its role
    assert pg_server.execute("SELECT rolsuper, rolcreatedb, rolconnlimit FROM pg_roles WHERE rolname = %s",
                             [role]).fetchone() == (False, False, 10)
    listed = alice_client.get(f"/v1/orgs/acme/projects/{project.pk}/addons").json()["items"]
    assert [a["id"] for a in listed] == [body["id"]]
    resolved = alice_client.get(f"/v1/orgs/acme/projects/{project.pk}/env/resolved").json()["variables"]
    assert {"key": "DATABASE_URL", "type": "secret", "source": "managed", "managedBy": f"addon:{body['id']}",
            "id": None, "value": None} in resolved
    assert as_user(charlie).get(f"/v1/orgs/acme/projects/{project.pk}/addons").status_code == 404


@pytest.mark.django_db
@pytest.mark.parametrize("body,status,code", [
    ({"kind": "mysql"}, 400, "validation_error"),
    ({"kind": "postgres", "name": "Bad Name"}, 400, "validation_error"),
    ({"kind": "postgres", "extra": 1}, 400, "validation_error"),
    ({}, 400, "validation_error"),
])
def test_bad_addon_requests_change_nothing(alice_client, make_project, pg_server, body, status, code):
    project = make_project("bad-addons", {"index.html": "x"})
    resp = alice_client.post(f"/v1/orgs/acme/projects/{project.pk}/addons", body, format="json")
    assert resp.status_code == status and resp.json()["code"] == code
    assert not Addon.objects.exists()


@pytest.mark.django_db
def test_an_addon_this_platform_does_not_offer_is_409_naming_the_setting(alice_client, make_project, settings):
    settings.ADDONS_REDIS_URL = ""
    project = make_project("no-redis", {"index.html": "x"})
    resp = alice_client.post(f"/v1/orgs/acme/projects/{project.pk}/addons", {"kind": "redis"}, format="json")
    assert resp.status_code == 409 and resp.json()["code"] == "addon_unavailable"
    assert "ADDONS_REDIS_URL" in resp.json()["message"] and not Addon.objects.exists()


@pytest.mark.django_db
def test_a_failed_provisioning_says_why_and_leaves_nothing(alice_client, make_project, settings):
    settings.ADDONS_POSTGRES_URL = "postgres://postgres@127.0.0.1:9/postgres"  # nothing listens there
    body = _add(alice_client, make_project("down", {"index.html": "x"}), "postgres")
    assert body["status"] == "error" and body["errorMessage"].startswith("Provisioning failed:")
    assert Addon.objects.get().credentials_encrypted == ""


@pytest.mark.django_db
def test_a_deleted_addon_loses_its_variables_at_once_and_its_data_after_the_grace(alice_client, make_project,
                                                                                 pg_server, travel):
    project = make_project("gone", {"index.html": "x"})
    addon = _add(alice_client, project, "postgres")
    role = f"{settings.ADDONS_NAME_PREFIX}{addon['id'][4:].lower()}"
    assert alice_client.delete(f"/v1/orgs/acme/projects/{project.pk}/addons/{addon['id']}").status_code == 200
    resolved = alice_client.get(f"/v1/orgs/acme/projects/{project.pk}/env/resolved").json()["variables"]
    assert not [v for v in resolved if v["key"] == "DATABASE_URL"]
    assert alice_client.get(f"/v1/orgs/acme/projects/{project.pk}/addons").json()["items"] == []
    assert alice_client.delete(f"/v1/orgs/acme/projects/{project.pk}/addons/{addon['id']}").status_code == 404
    from platform_app.tasks.resources import addons_purge

    assert addons_purge() == 0  # within the grace period the data stays
    travel(25 * 3600)
    assert addons_purge() == 1
    assert pg_server.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [role]).fetchone() is None


@pytest.mark.django_db
def test_a_deleted_redis_addons_keys_and_user_are_purged_from_database_0(alice_client, make_project, redis_server,
                                                                       travel):
    """Every add-on works in database 0 (its REDIS_URL says /0 and the guard refuses SELECT), whatever database
    ADDONS_REDIS_URL names for the platform's own connection (here 13)."""
    import json

    import redis

    from platform_app.services.env.crypto import decrypt
    from platform_app.tasks.resources import addons_purge

    project = make_project("cache", {"index.html": "x"})
    addon = _add(alice_client, project, "redis")
    credentials = json.loads(decrypt(Addon.objects.get(pk=addon["id"]).credentials_encrypted))
    own = redis.Redis(host="127.0.0.1", port=6379, db=0, username=credentials["user"],
                      password=credentials["password"])
    own.set(f"{credentials['prefix']}kept", "1")
    assert alice_client.delete(f"/v1/orgs/acme/projects/{project.pk}/addons/{addon['id']}").status_code == 200
    travel(25 * 3600)
    assert addons_purge() == 1
    admin = redis.Redis(host="127.0.0.1", port=6379, db=0)
    assert admin.exists(f"{credentials['prefix']}kept") == 0
    assert credentials["user"] not in admin.acl_users()


@pytest.mark.django_db(transaction=True)
def test_the_build_and_the_app_reach_their_own_database_and_nothing_else(live_server, sandbox, alice, workspace,
                                                                        as_user, make_project, pg_server,
                                                                        redis_server, tmp_path):
    from django.test.testcases import TestCase

    from platform_app.nodes.agent import Agent
    from platform_app.services.deployments.build_jobs import build_runner

    client = as_user(alice)
    project = make_project("notes", {"app.py": APP}, output_directory=".", start_command="python3 app.py",
                           build_command=f"{PSQL} \"$DATABASE_URL\" -c \"create table notes (note text); "
                                         f"insert into notes values ('written by the build')\"")
    assert _add(client, project, "postgres")["status"] == "ready"
    assert _add(client, project, "redis")["status"] == "ready"
    deployment = deploy(client, project, TestCase.captureOnCommitCallbacks)
    assert deployment.status == "ready", log_text(deployment)
    assert "INSERT 0 1" in log_text(deployment)
    agent = Agent.join(server=live_server.url, token=agent_invite_create(workspace=workspace)[1], name="node",
                       runner=build_runner(), data_dir=tmp_path / "node")
    host = {"Host": "notes.localhost"}
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            agent.step()
            page = httpx.get(live_server.url + "/", headers=host)
            if page.status_code == 200:
                break
            time.sleep(0.3)
        assert page.text == "written by the build"
        role = settings.ADDONS_NAME_PREFIX + [a for a in Addon.objects.filter(kind="postgres")][0].pk[4:].lower()
        assert httpx.get(live_server.url + "/whoami", headers=host).text == f"{role} {role}"
        refused = httpx.get(live_server.url + "/as-superuser", headers=host).text
        assert "only" in refused and "1" != refused.strip()
        answers = httpx.get(live_server.url + "/redis", headers=host).text.split(" | ")
        assert answers[0] == "OK" and answers[1] == "kept"
        assert "NOPERM" in answers[2] and "NOPERM" in answers[3]  # other keys, and the server's admin commands
        assert "WRONGPASS" in answers[4] or "invalid" in answers[4].lower()
        assert answers[5] == "kept"  # still its own user afterwards
    finally:
        agent.leave()
