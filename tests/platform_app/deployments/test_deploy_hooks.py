"""Deploy hooks: one queued build per hook at a time (429 with Retry-After past it), and the hook's secret never in
the server's log."""
import logging

import pytest
from rest_framework.test import APIClient

from platform_app.models import Deployment, DeployHook
from tests.platform_app.deployments.factories import DeployHookFactory
from tests.platform_app.projects.factories import ProjectFactory
from tests.test_bad_input import platform_error

pytestmark = pytest.mark.django_db

SECRET = "dh_hookSecretForTheLimitTests0123456789"


@pytest.fixture
def hook(workspace):
    project = ProjectFactory(workspace=workspace, slug="web", git_url="https://git.example.com/web.git")
    return DeployHookFactory(project=project, raw=SECRET)


def fire(**extra):
    return APIClient().post(f"/v1/hooks/deploy/{SECRET}", **extra)


def test_calls_while_the_hooks_build_is_queued_are_429(hook, settings):
    first = fire()
    assert first.status_code == 200 and first.json()["status"] == "queued"
    for _ in range(2):
        body = platform_error(fire(), 429, "rate_limited")
        assert body["details"]["retryAfter"] == settings.DEPLOY_HOOK_RETRY_AFTER_SECONDS
        assert body["details"]["deploymentId"] == first.json()["id"]
    assert fire()["Retry-After"] == str(settings.DEPLOY_HOOK_RETRY_AFTER_SECONDS)
    assert Deployment.objects.count() == 1
    hook.refresh_from_db()
    assert hook.last_deployment_id == first.json()["id"]


def test_once_the_build_has_started_the_hook_queues_the_next(hook):
    first = fire().json()
    Deployment.objects.filter(pk=first["id"]).update(status="building")
    second = fire()
    assert second.status_code == 200 and second.json()["id"] != first["id"]
    assert fire().status_code == 429
    assert Deployment.objects.count() == 2


def test_the_limit_is_per_hook(hook, workspace):
    other = DeployHookFactory(project=hook.project, raw="dh_anotherHookOfTheSameProject000000")
    assert fire().status_code == 200
    assert APIClient().post("/v1/hooks/deploy/dh_anotherHookOfTheSameProject000000").status_code == 200
    assert set(DeployHook.objects.values_list("last_deployment__trigger", flat=True)) == {"hook"}
    assert other.pk != hook.pk and Deployment.objects.count() == 2


def test_a_retry_with_the_same_idempotency_key_is_still_answered(hook):
    first = fire(HTTP_IDEMPOTENCY_KEY="cms-42")
    again = fire(HTTP_IDEMPOTENCY_KEY="cms-42")
    assert again.status_code == 200 and again.json()["id"] == first.json()["id"]
    assert fire(HTTP_IDEMPOTENCY_KEY="cms-43").status_code == 429


@pytest.mark.parametrize("method", ["get", "put", "delete"])
def test_the_secret_stays_out_of_the_log_on_a_wrong_method(hook, caplog, method):
    caplog.set_level(logging.INFO)
    resp = getattr(APIClient(), method)(f"/v1/hooks/deploy/{SECRET}")
    assert resp.status_code == 405
    logged = [r.getMessage() for r in caplog.records]
    assert any("/v1/hooks/deploy/" in line for line in logged), logged  # the request is still logged
    assert not any(SECRET in line for line in logged)
    assert SECRET not in caplog.text


def test_an_unknown_secret_stays_out_of_the_log(db, caplog):
    caplog.set_level(logging.INFO)
    assert APIClient().post("/v1/hooks/deploy/dh_unknownSecretValue").status_code == 404
    assert "dh_unknownSecretValue" not in caplog.text
