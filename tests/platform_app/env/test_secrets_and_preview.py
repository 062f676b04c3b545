"""Secret scanner on a fixture repository, import and ignore; preview protection verify/check."""
import subprocess
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from platform_app.models import EnvVar, SecretFinding
from platform_app.services.env.env import env_resolve
from platform_app.services.env.secret_scan import secret_scan_run
from tests.conftest import hosted_repo
from tests.platform_app.projects.factories import ProjectFactory

pytestmark = pytest.mark.django_db

PLANTED = {
    "config/aws.py": 'AWS_ACCESS_KEY_ID = "AKIAQ7ZX3M4TB2WS6YPL"\n',
    ".env": "DEBUG=true\nSTRIPE_SECRET=Xq8vT2mLk9Rz4Wp7Yb3Nc6Hd1Fj5Gs0A\n",
    "deploy/id_rsa": "-----BEGIN RSA PRIVATE KEY-----\nMIIBOgIBAAJBAK...\n-----END RSA PRIVATE KEY-----\n",
    "ci.yml": "token: ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8" + "\n",
    # look-alikes that must not be reported
    "docs/example.md": 'AWS key format: AKIAIOSFODNN7EXAMPLE\napi_key = "your-api-key-here"\n',
    ".env.example": "STRIPE_SECRET=changeme\nAPI_TOKEN=${API_TOKEN}\nPASSWORD=short\n",
    "src/app.js": "const colors = 'abcdefghijklmnopqrstuvwxyz0123456789';\n",
}


@pytest.fixture
def repo(workspace):
    """The planted repository, hosted by the platform for the workspace (what the import re-reads)."""
    url = hosted_repo(workspace, "shop.git", PLANTED)
    root = Path(unquote(urlsplit(url).path))
    sha = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], check=True, capture_output=True,
                         text=True).stdout.strip()
    return root, sha


@pytest.fixture
def project(workspace, repo):
    return ProjectFactory(workspace=workspace, name="Shop", slug="shop", git_url=repo[0].as_uri())


def test_scanner_finds_planted_secrets_and_not_look_alikes(alice_client, project, repo):
    root, sha = repo
    assert secret_scan_run(project=project, repo_dir=root, commit_sha=sha) == 4
    items = alice_client.get(f"/v1/orgs/acme/projects/{project.pk}/secret-findings").json()["items"]
    found = {(i["file"], i["rule"]) for i in items}
    assert found == {("config/aws.py", "aws-access-key-id"), (".env", "high-entropy-dotenv"),
                     ("deploy/id_rsa", "private-key"), ("ci.yml", "github-token")}
    for item in items:
        assert "AKIAQ7ZX3M4TB2WS6YPL" not in item["preview"] and "Xq8vT2mLk9Rz4Wp7Yb3Nc6Hd1Fj5Gs0A" not in item["preview"]
    # a second scan of the same commit finds nothing new
    assert secret_scan_run(project=project, repo_dir=root, commit_sha=sha) == 0
    assert SecretFinding.objects.count() == 4


def test_build_log_lines_are_scanned(project, repo):
    root, sha = repo
    secret_scan_run(project=project, repo_dir=root, commit_sha=sha,
                    log_lines=["npm run build", "using key xoxb-123456789012-abcdefghij"])
    assert SecretFinding.objects.filter(file="(build log)", rule="slack-token").exists()


def test_import_moves_the_value_into_a_secret_variable(alice_client, project, repo):
    root, sha = repo
    secret_scan_run(project=project, repo_dir=root, commit_sha=sha)
    finding = SecretFinding.objects.get(rule="aws-access-key-id")
    resp = alice_client.post(f"/v1/orgs/acme/projects/{project.pk}/secret-findings/{finding.pk}/import",
                             {"key": "AWS_ACCESS_KEY_ID", "target": ["production"]}, format="json")
    assert resp.status_code == 201 and resp.json()["status"] == "imported"
    var = EnvVar.objects.get()
    assert var.type == "secret"
    assert env_resolve(project=project, environment="production", branch=None) == {
        "AWS_ACCESS_KEY_ID": "AKIAQ7ZX3M4TB2WS6YPL"}


def test_ignored_finding_does_not_come_back(alice_client, project, repo):
    root, sha = repo
    secret_scan_run(project=project, repo_dir=root, commit_sha=sha)
    finding = SecretFinding.objects.get(rule="github-token")
    resp = alice_client.delete(f"/v1/orgs/acme/projects/{project.pk}/secret-findings/{finding.pk}")
    assert resp.status_code == 200 and resp.json()["status"] == "ignored"
    assert secret_scan_run(project=project, repo_dir=root, commit_sha=sha) == 0
    files = [i["file"] for i in alice_client.get(f"/v1/orgs/acme/projects/{project.pk}/secret-findings").json()["items"]]
    assert "ci.yml" not in files and len(files) == 3


def test_preview_protection_password_flow(alice_client, api, project, settings):
    base = f"/v1/orgs/acme/projects/{project.pk}/preview-protection"
    assert alice_client.get(base).json()["mode"] == "off"
    assert api.get(f"/v1/preview-protection/{project.pk}/check").json()["allowed"] is True
    resp = alice_client.put(base, {"mode": "password", "password": "open-sesame-42"}, format="json")
    assert resp.status_code == 200 and resp.json() == {"mode": "password", "passwordSet": True,
                                                       "updatedAt": resp.json()["updatedAt"]}
    assert "open-sesame" not in str(project.preview_protection.password_hash)
    check = api.get(f"/v1/preview-protection/{project.pk}/check").json()
    assert check == {"allowed": False, "mode": "password", "reason": "password required"}
    wrong = api.post(f"/v1/preview-protection/{project.pk}/verify", {"password": "nope-nope"}, format="json")
    assert wrong.status_code == 401 and wrong.json()["code"] == "invalid_password"
    ok = api.post(f"/v1/preview-protection/{project.pk}/verify", {"password": "open-sesame-42"}, format="json")
    assert ok.status_code == 201
    assert api.get(f"/v1/preview-protection/{project.pk}/check").json()["allowed"] is True
    assert alice_client.get(f"/v1/preview-protection/{project.pk}/check").json()["reason"] == "workspace member"


def test_preview_password_attempts_are_limited(api, alice_client, project, settings):
    settings.PREVIEW_ATTEMPTS_PER_WINDOW = 3
    alice_client.put(f"/v1/orgs/acme/projects/{project.pk}/preview-protection",
                     {"mode": "password", "password": "open-sesame-42"}, format="json")
    for _ in range(3):
        api.post(f"/v1/preview-protection/{project.pk}/verify", {"password": "wrong-one"}, format="json")
    resp = api.post(f"/v1/preview-protection/{project.pk}/verify", {"password": "open-sesame-42"}, format="json")
    assert resp.status_code == 429 and "Retry-After" in resp


def test_members_only_mode(alice_client, api, project, as_user, charlie):
    alice_client.put(f"/v1/orgs/acme/projects/{project.pk}/preview-protection", {"mode": "members"}, format="json")
    assert api.get(f"/v1/preview-protection/{project.pk}/check").json()["allowed"] is False
    assert as_user(charlie).get(f"/v1/preview-protection/{project.pk}/check").json()["allowed"] is False
    assert alice_client.get(f"/v1/preview-protection/{project.pk}/check").json()["allowed"] is True


def test_password_mode_needs_a_password(alice_client, project):
    resp = alice_client.put(f"/v1/orgs/acme/projects/{project.pk}/preview-protection", {"mode": "password"},
                            format="json")
    assert resp.status_code == 400
