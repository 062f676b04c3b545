"""Env vars through the HTTP API: validation, encryption at rest, reveal matrix, branch overrides, import."""
import pytest
from django.db import connection

from platform_app.models import AuditEvent, EnvVar
from platform_app.services.env.env import env_resolve, env_snapshot
from tests.platform_app.projects.factories import ProjectFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def project(workspace):
    return ProjectFactory(workspace=workspace, name="Web", slug="web-app", git_url="file:///nowhere")


@pytest.fixture
def url(project):
    return f"/v1/orgs/acme/projects/{project.pk}"


def create(client, url, **body):
    body.setdefault("key", "API_URL")
    body.setdefault("value", "https://api.example.com")
    body.setdefault("target", ["production", "preview"])
    return client.post(f"{url}/env", body, format="json")


def test_values_are_encrypted_at_rest(alice_client, url):
    resp = create(alice_client, url, key="DB_PASSWORD", value="hunter2-but-longer", type="secret")
    assert resp.status_code == 201
    assert resp.json()["value"] is None  # a secret is never shown unless revealed
    with connection.cursor() as cursor:
        cursor.execute("SELECT value_encrypted FROM platform_app_envvar")
        stored = cursor.fetchone()[0]
    assert "hunter2" not in stored and stored.startswith("gAAAA")


@pytest.mark.parametrize("scope, reveal, header, expect", [
    ("env:read", True, True, "value"),
    ("env:read", True, False, 400),
    ("env:read", False, True, None),
    ("env:write", True, True, "value"),
    ("admin", True, True, "value"),
    ("read", True, True, 403),
    ("read", False, False, 403),
    ("deploy", True, True, 403),
])
def test_reveal_matrix(alice, alice_client, as_token, workspace, url, scope, reveal, header, expect):
    create(alice_client, url, key="TOKEN", value="s3cr3t-value", type="secret")
    client = as_token(alice, scopes=[scope], workspace=workspace)
    extra = {"HTTP_X_SVC_REVEAL": "true"} if header else {}
    resp = client.get(f"{url}/env" + ("?reveal=true" if reveal else ""), **extra)
    if expect == 403:
        assert resp.status_code == 403
        assert resp.json()["details"] == {"requiredScope": "env:read", "tokenScopes": [scope]}
    elif expect == 400:
        assert resp.status_code == 400 and resp.json()["code"] == "reveal_header_required"
    else:
        assert resp.status_code == 200
        value = resp.json()["items"][0]["value"]
        assert (value == "s3cr3t-value") if expect == "value" else value is None
    revealed = AuditEvent.objects.filter(action="env_var.revealed").count()
    assert revealed == (1 if expect == "value" else 0)


@pytest.mark.parametrize("body, code", [
    ({"key": "1BAD"}, "invalid_key"),
    ({"key": "WITH-DASH"}, "invalid_key"),
    ({"key": "PORT"}, "reserved_key"),
    ({"key": "SVC_TOKEN"}, "reserved_key"),
    ({"target": ["staging"]}, "unknown_target"),
    ({"value": "x" * (64 * 1024 + 1)}, "value_too_large"),
    ({"colour": "red"}, "validation_error"),
])
def test_bad_variables_are_400_and_nothing_is_written(alice_client, url, body, code):
    resp = create(alice_client, url, **body)
    assert resp.status_code == 400
    assert resp.json()["code"] == code
    assert EnvVar.objects.count() == 0


def test_duplicate_key_for_the_same_target_and_branch_is_409(alice_client, url):
    assert create(alice_client, url, target=["production"]).status_code == 201
    resp = create(alice_client, url, target=["preview", "production"])
    assert resp.status_code == 409 and resp.json()["code"] == "duplicate_env_var"
    assert create(alice_client, url, target=["preview"]).status_code == 201
    assert create(alice_client, url, target=["production"], branch="main").status_code == 201
    assert EnvVar.objects.count() == 3


def test_branch_value_wins_for_that_branch(alice_client, url, project):
    create(alice_client, url, key="API_URL", value="general", target=["preview"])
    create(alice_client, url, key="API_URL", value="feature", target=["preview"], branch="feature/x")
    create(alice_client, url, key="ONLY_PROD", value="p", target=["production"])
    assert env_resolve(project=project, environment="preview", branch="feature/x") == {"API_URL": "feature"}
    assert env_resolve(project=project, environment="preview", branch="main") == {"API_URL": "general"}
    body = alice_client.get(f"{url}/env/resolved?env=preview&branch=feature/x").json()
    assert [(v["key"], v["source"], v["value"]) for v in body["variables"]] == [("API_URL", "branch", "feature")]
    assert body["hash"] == env_snapshot(project=project, environment="preview", branch="feature/x")["hash"]


def test_filters(alice_client, url):
    create(alice_client, url, key="A", target=["production"])
    create(alice_client, url, key="B", target=["preview"], branch="dev")
    keys = lambda q: [v["key"] for v in alice_client.get(f"{url}/env?{q}").json()["items"]]  # noqa: E731
    assert keys("target=production") == ["A"]
    assert keys("env=preview") == ["B"]
    assert keys("branch=dev") == ["B"]


def test_update_and_delete(alice_client, url):
    var = create(alice_client, url).json()
    resp = alice_client.patch(f"{url}/env/{var['id']}", {"value": "https://v2.example.com", "target": ["development"]},
                              format="json")
    assert resp.status_code == 200 and resp.json()["target"] == ["development"]
    assert resp.json()["value"] == "https://v2.example.com"
    assert alice_client.delete(f"{url}/env/{var['id']}").status_code == 200
    assert EnvVar.objects.count() == 0
    assert alice_client.delete(f"{url}/env/{var['id']}").status_code == 404


def test_viewer_cannot_change_variables(alice_client, as_user, workspace, url):
    from tests.factories import MembershipFactory

    viewer = MembershipFactory(workspace=workspace, role="viewer").user
    resp = create(as_user(viewer), url)
    assert resp.status_code == 403 and EnvVar.objects.count() == 0


TRICKY = '''# a comment
export API_URL=https://api.example.com
QUOTED="two words # not a comment"
SINGLE='literal $HOME \\n'
ESCAPED="line1\\nline2"
MULTI="first
second"
EMPTY=
'''


def test_dotenv_import_upserts_in_one_request(alice_client, url, project):
    create(alice_client, url, key="API_URL", value="old", target=["production"])
    resp = alice_client.post(f"{url}/env/import", {"dotenv": TRICKY, "target": ["production"], "type": "plain"},
                             format="json")
    assert resp.status_code == 201
    assert resp.json() == {"created": 5, "updated": 1,
                           "keys": ["API_URL", "QUOTED", "SINGLE", "ESCAPED", "MULTI", "EMPTY"]}
    env = env_resolve(project=project, environment="production", branch=None)
    assert env["API_URL"] == "https://api.example.com"
    assert env["QUOTED"] == "two words # not a comment"
    assert env["SINGLE"] == "literal $HOME \\n"
    assert env["ESCAPED"] == "line1\nline2"
    assert env["MULTI"] == "first\nsecond"
    assert env["EMPTY"] == ""


def test_invalid_dotenv_line_rejects_everything(alice_client, url):
    text = "GOOD=1\nALSO_GOOD=2\nthis line is wrong\nLATER=3\n"
    resp = alice_client.post(f"{url}/env/import", {"dotenv": text, "target": ["production"]}, format="json")
    assert resp.status_code == 400
    assert resp.json()["code"] == "invalid_dotenv" and resp.json()["details"] == {"line": 3}
    assert EnvVar.objects.count() == 0


def test_import_with_a_reserved_key_writes_nothing(alice_client, url):
    resp = alice_client.post(f"{url}/env/import", {"dotenv": "OK=1\nPORT=80\n", "target": ["production"]},
                             format="json")
    assert resp.status_code == 400 and EnvVar.objects.count() == 0


def test_a_value_longer_than_its_max_length_as_sent_is_refused(alice_client, url):
    """maxLength holds for the value as sent: DRF would trim surrounding whitespace first and take a longer one."""
    from platform_app.models import Environment

    env = next(e for e in alice_client.get(f"{url}/environments").json()["items"] if e["name"] == "production")
    long = "\u000b" + "*" * 200  # 201 characters, 200 once trimmed
    resp = alice_client.patch(f"{url}/environments/{env['id']}", {"branchPattern": long}, format="json")
    assert resp.status_code == 400 and "branchPattern" in resp.json()["details"], resp.content
    assert Environment.objects.get(pk=env["id"]).branch_pattern == env["branchPattern"]
    created = alice_client.post(f"{url}/environments", {"name": "staging", "branchPattern": " " + "*" * 200},
                                format="json")
    assert created.status_code == 400 and not Environment.objects.filter(name="staging").exists()
    fits = alice_client.patch(f"{url}/environments/{env['id']}", {"branchPattern": " " + "*" * 199}, format="json")
    assert fits.status_code == 200 and fits.json()["branchPattern"] == "*" * 199


def test_environments_builtins_and_custom(alice_client, url):
    names = [e["name"] for e in alice_client.get(f"{url}/environments").json()["items"]]
    assert sorted(names) == ["development", "preview", "production"]
    created = alice_client.post(f"{url}/environments", {"name": "staging", "branchPattern": "release/*"},
                                format="json")
    assert created.status_code == 201
    create(alice_client, url, key="X", target=["staging"])
    renamed = alice_client.patch(f"{url}/environments/{created.json()['id']}", {"name": "qa"}, format="json")
    assert renamed.json()["name"] == "qa"
    assert EnvVar.objects.get().targets == ["qa"]
    builtin = next(e for e in alice_client.get(f"{url}/environments").json()["items"] if e["name"] == "production")
    assert alice_client.delete(f"{url}/environments/{builtin['id']}").status_code == 409
    assert alice_client.post(f"{url}/environments", {"name": "qa"}, format="json").status_code == 409


def test_other_workspace_project_is_404(as_user, charlie, url):
    assert as_user(charlie).get(f"{url}/env").status_code == 404
