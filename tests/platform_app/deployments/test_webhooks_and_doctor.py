"""Git webhooks (GitHub's signature scheme and test vector) and the build doctor."""
import hashlib
import hmac
import json

import pytest

from platform_app.models import Deployment, DoctorReport, Project
from platform_app.services.deployments.deployments import log_append
from platform_app.services.providers.webhooks import signature_valid
from tests.platform_app.deployments.factories import DeploymentFactory
from tests.platform_app.projects.factories import ProjectFactory

pytestmark = pytest.mark.django_db
SECRET = "It's a Secret to Everybody"


def sign(body: bytes, secret: str = SECRET) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def test_githubs_published_test_vector():
    expected = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
    assert signature_valid(SECRET, b"Hello, World!", expected)
    assert not signature_valid(SECRET, b"Hello, World?", expected)


def test_ping_with_the_test_vector_is_accepted(api, settings):
    settings.GIT_A_WEBHOOK_SECRET = SECRET
    resp = api.generic("POST", "/v1/webhooks/git-a", b"Hello, World!", content_type="text/plain",
                       HTTP_X_GIT_EVENT="ping",
                       HTTP_X_HUB_SIGNATURE_256="sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17")
    assert resp.status_code == 200 and resp.json()["event"] == "ping"


@pytest.fixture
def project(workspace, tmp_path, settings):
    settings.GIT_A_WEBHOOK_SECRET = SECRET
    settings.ARTIFACT_ROOT, settings.BUILD_ROOT = tmp_path / "a", tmp_path / "b"
    return ProjectFactory(workspace=workspace, name="Site", slug="hooked", git_url="https://git.example.com/acme/site.git",
                          git_provider="git-a", git_repo="acme/site")


def push(api, body: dict, delivery="d-1", signature=None):
    raw = json.dumps(body).encode()
    return api.generic("POST", "/v1/webhooks/git-a", raw, content_type="application/json", HTTP_X_GIT_EVENT="push",
                       HTTP_X_GIT_DELIVERY=delivery, HTTP_X_HUB_SIGNATURE_256=signature or sign(raw))


PUSH = {"ref": "refs/heads/feature/login", "repository": {"full_name": "acme/site",
                                                          "clone_url": "https://git.example.com/acme/site.git"}}


def test_push_deploys_matching_projects_once_per_delivery(api, project, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        resp = push(api, PUSH)
        again = push(api, PUSH)
    assert resp.status_code == 200 and len(resp.json()["deployments"]) == 1
    assert again.status_code == 200 and again.json()["duplicate"] is True
    deployment = Deployment.objects.get()
    assert (deployment.env, deployment.branch, deployment.trigger) == ("preview", "feature/login", "git")


def test_bad_signature_is_401_and_deploys_nothing(api, project):
    resp = push(api, PUSH, signature=sign(b"something else"))
    assert resp.status_code == 401 and resp.json()["code"] == "invalid_signature"
    assert Deployment.objects.count() == 0


def test_auto_deploy_off_and_unknown_events(api, project, django_capture_on_commit_callbacks):
    Project.objects.filter(pk=project.pk).update(auto_deploy=False)
    with django_capture_on_commit_callbacks(execute=False):
        assert push(api, {**PUSH, "ref": "refs/heads/main"}).json()["deployments"] == []
    raw = b"{}"
    resp = api.generic("POST", "/v1/webhooks/git-a", raw, content_type="application/json", HTTP_X_GIT_EVENT="star",
                       HTTP_X_HUB_SIGNATURE_256=sign(raw))
    assert resp.status_code == 200 and resp.json()["ignored"] is True
    assert Deployment.objects.count() == 0


FIXTURE_LOGS = {
    "missing-dependency": ["Traceback (most recent call last):", "ModuleNotFoundError: No module named 'flask'"],
    "command-not-found": ["$ pnpm build", "sh: 1: pnpm: not found"],
    "out-of-memory": ["FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory"],
    "wrong-output-directory": ["Error: The output directory 'dist' was not produced by the build."],
    "missing-env-var": ["  File \"settings.py\", line 3", "KeyError: 'DATABASE_URL'"],
    "wrong-runtime-version": ["error vite@5.0.0: The engine \"node\" is incompatible with this module."],
}


@pytest.mark.parametrize("rule", list(FIXTURE_LOGS))
def test_doctor_finds_each_rule_with_evidence_and_a_fix(alice_client, project, rule):
    deployment = DeploymentFactory(project=project, env="preview", branch="main", status="error",
                                   error_message="build failed")
    for line in ["$ npm run build", *FIXTURE_LOGS[rule]]:
        log_append(deployment, line)
    items = alice_client.get(f"/v1/orgs/acme/deployments/{deployment.pk}/diagnoses").json()["items"]
    assert [i["rule"] for i in items] == [rule]
    assert items[0]["evidence"][0]["text"] == FIXTURE_LOGS[rule][-1] and items[0]["fix"]
    created = alice_client.post(f"/v1/orgs/acme/deployments/{deployment.pk}/doctor")
    assert created.status_code == 201 and created.json()["findings"][0]["rule"] == rule
    assert alice_client.get(f"/v1/orgs/acme/deployments/{deployment.pk}/doctor").json()["id"] == created.json()["id"]


def test_doctor_refuses_healthy_deployments_and_pr_needs_a_connection(alice_client, project):
    ready = DeploymentFactory(project=project, env="preview", branch="main", status="ready")
    assert alice_client.post(f"/v1/orgs/acme/deployments/{ready.pk}/doctor").status_code == 409
    failed = DeploymentFactory(project=project, env="preview", branch="main", status="error")
    report = alice_client.post(f"/v1/orgs/acme/deployments/{failed.pk}/doctor").json()
    resp = alice_client.post(f"/v1/orgs/acme/doctor-reports/{report['id']}/pr")
    assert resp.status_code == 404 and "no git-a connection" in resp.json()["message"]
    assert DoctorReport.objects.get().pull_request_url == ""


def test_doctor_opens_a_pull_request_through_git_a(alice_client, workspace, httpserver, settings):
    import base64

    from platform_app.services.providers.git_connections import connection_save

    settings.GIT_PROVIDERS = {**settings.GIT_PROVIDERS, "git-a": {
        **settings.GIT_PROVIDERS["git-a"], "client_id": "gh", "api_url": httpserver.url_for("/api").rstrip("/")}}
    project = ProjectFactory(workspace=workspace, name="Py", slug="py-app", git_provider="git-a",
                             git_repo="acme/py", production_branch="main", git_url="")
    connection_save(workspace=workspace, provider="git-a", token="gho_token")
    deployment = DeploymentFactory(project=project, env="production", branch="main", status="error")
    log_append(deployment, "ModuleNotFoundError: No module named 'flask'")
    report = alice_client.post(f"/v1/orgs/acme/deployments/{deployment.pk}/doctor").json()
    repo = "/api/repos/acme/py"
    httpserver.expect_request(f"{repo}/contents/requirements.txt", query_string="ref=main").respond_with_json(
        {"content": base64.b64encode(b"gunicorn==23.0.0\n").decode(), "sha": "old"})
    httpserver.expect_request(f"{repo}/git/ref/heads/main").respond_with_json({"object": {"sha": "abc123"}})
    httpserver.expect_request(f"{repo}/git/refs", method="POST").respond_with_json({"ref": "x"}, status=201)
    httpserver.expect_request(f"{repo}/contents/requirements.txt", query_string={"ref": f"doctor/{report['id']}"}).respond_with_json(
        {"sha": "old"})
    httpserver.expect_request(f"{repo}/contents/requirements.txt", method="PUT").respond_with_json({}, status=201)
    httpserver.expect_request(f"{repo}/pulls", method="POST").respond_with_json(
        {"html_url": "https://github.example/acme/py/pull/7", "number": 7}, status=201)
    resp = alice_client.post(f"/v1/orgs/acme/doctor-reports/{report['id']}/pr")
    assert resp.status_code == 201 and resp.json()["pullRequestUrl"] == "https://github.example/acme/py/pull/7"
    put = next(req for req, _ in httpserver.log if req.method == "PUT")
    body = put.get_json()
    assert base64.b64decode(body["content"]).decode() == "gunicorn==23.0.0\nflask\n"
    assert body["branch"] == f"doctor/{report['id']}" and body["sha"] == "old"
    pr = next(req for req, _ in httpserver.log if req.path.endswith("/pulls")).get_json()
    assert pr["base"] == "main" and "flask" in pr["body"]
