"""A build command is a stranger's code: in the sandbox it sees nothing of the platform (its files, variables,
processes, services) and reaches nothing inside through the egress proxy. Each probe prints a marker, so a probe
that did not run fails the test as surely as one that saw something."""
import pytest

from platform_app.models import Deployment
from tests.platform_app.sandbox.conftest import deploy, log_text, probe_script, probes, secrets_of_the_platform

pytestmark = pytest.mark.django_db


@pytest.fixture
def other_tenant(charlie, as_user, make_project, sandbox, django_capture_on_commit_callbacks):
    """Another workspace's ready static deployment: its artifact is on the same machine."""
    from platform_app.models import Workspace

    project = make_project("charlies-site", {"index.html": "<h1>charlie's private page</h1>"},
                           workspace=Workspace.objects.get(slug="charlies"))
    deployment = deploy(as_user(charlie), project, django_capture_on_commit_callbacks)
    assert deployment.status == "ready", deployment.error_message
    return deployment


def test_a_build_command_sees_and_reaches_nothing_of_the_platform(alice_client, make_project, other_tenant,
                                                                   django_capture_on_commit_callbacks, settings):
    other = settings.ARTIFACT_ROOT / other_tenant.artifact_path / "index.html"
    assert other.read_text() == "<h1>charlie's private page</h1>"
    project = make_project("prober", {"probe.py": probe_script(web_port=8000, other_artifact=other),
                                      "index.html": "ok"}, build_command="python3 probe.py")
    deployment = deploy(alice_client, project, django_capture_on_commit_callbacks)
    text = log_text(deployment)
    assert deployment.status == "ready", deployment.error_message
    found = probes(text)

    for name in ("jwt-key", "encryption-key", "django-secret", "other-artifact", "relative-key"):
        assert found[f"read {name}"].startswith("refused: FileNotFoundError"), (name, found.get(f"read {name}"))
    assert set(eval(found["environ"])) <= {"PATH", "HOME", "LANG", "CI", "PYTHONUNBUFFERED", "TMPDIR", "HTTP_PROXY",
                                           "HTTPS_PROXY", "http_proxy", "https_proxy", "NO_PROXY", "no_proxy", "PWD",
                                           "SHLVL", "_", "OLDPWD"}
    assert "DATABASE_URL" not in found["pid1-environ"] and "DJANGO" not in found["pid1-environ"]
    processes = eval(found["processes"])
    assert len(processes) <= 6 and not any(b"pytest" in p or b"celery" in p for p in processes)
    assert eval(found["root"]) == ["bin", "dev", "etc", "home", "lib", "lib64", "opt", "proc", "sbin", "tmp",
                                   "usr", "var", "workspace"]
    assert "data" not in eval(found["up"]) and "manage.py" not in found["up"]
    for service in ("postgresql", "redis", "web"):
        assert found[f"connect {service}"] == "refused: ConnectionRefusedError", service
    proxied = {name: result for name, result in found.items() if name.startswith("proxy ")}
    assert len(proxied) == 7 and all("403 Forbidden" in r for r in proxied.values()), proxied
    for name, value in secrets_of_the_platform().items():
        assert value not in text, f"{name} leaked into the build log"
    assert "Building in a sandbox (bubblewrap)" in text


def test_sandbox_report_is_kept_with_the_deployment_and_shown(alice_client, make_project, sandbox,
                                                             django_capture_on_commit_callbacks, client, alice):
    project = make_project("reported", {"index.html": "ok"})
    deployment = deploy(alice_client, project, django_capture_on_commit_callbacks)
    report = Deployment.objects.get(pk=deployment.pk).snapshot["sandbox"]
    assert report["runner"] == "bubblewrap" and all(report["isolation"].values())
    assert report["limits"]["time"] == "watch" and report["limits"]["disk"] == "watch"
    detail = alice_client.get(f"/v1/orgs/acme/deployments/{deployment.pk}").json()
    assert detail["snapshot"]["sandbox"]["runner"] == "bubblewrap"
    client.force_login(alice)
    page = client.get(f"/dashboard/acme/deployments/{deployment.pk}/").content.decode()
    assert "Built in a sandbox" in page and "bubblewrap" in page


def test_without_bubblewrap_a_build_says_it_ran_unsandboxed(alice_client, make_project, settings, tmp_path,
                                                           django_capture_on_commit_callbacks, client, alice):
    settings.SANDBOX_RUNNER = "none"
    settings.ARTIFACT_ROOT, settings.BUILD_ROOT = tmp_path / "artifacts", tmp_path / "builds"
    project = make_project("plain", {"index.html": "ok"})
    deployment = deploy(alice_client, project, django_capture_on_commit_callbacks)
    assert deployment.status == "ready"
    assert "Warning: This runs WITHOUT a sandbox" in log_text(deployment)
    client.force_login(alice)
    page = client.get(f"/dashboard/acme/deployments/{deployment.pk}/").content.decode()
    assert "without a sandbox" in page


def test_without_a_sandbox_where_one_is_required_the_build_ends_in_error_naming_the_setting(
        alice_client, make_project, settings, tmp_path, django_capture_on_commit_callbacks):
    settings.SANDBOX_RUNNER, settings.SANDBOX_ALLOW_NONE = "none", False
    settings.ARTIFACT_ROOT, settings.BUILD_ROOT = tmp_path / "artifacts", tmp_path / "builds"
    deployment = deploy(alice_client, make_project("strict", {"index.html": "ok"}), django_capture_on_commit_callbacks)
    assert deployment.status == "error" and "SANDBOX_ALLOW_NONE" in deployment.error_message
