"""The Cron, Log drains and Alerts pages of a project: what they show, what a form creates (the secret shown once),
the buttons the owner has and a developer does not, and nothing for other workspaces."""
import json

import pytest
from django.test import Client

from platform_app.models import CronJob, LogDrain
from tests.platform_app.automation.factories import AlertFactory, AlertRuleFactory, CronJobFactory, CronRunFactory
from tests.platform_app.projects.factories import ProjectFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def project(workspace):
    return ProjectFactory(workspace=workspace, name="Shop", slug="shop")


def browser(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def page(project, name):
    return f"/dashboard/acme/projects/{project.slug}/{name}/"


def test_cron_page_lists_jobs_runs_and_creates_with_the_secret_once(alice, project):
    job = CronJobFactory(project=project, schedule="*/10 * * * *", path="/api/sweep")
    CronRunFactory(job=job, status="failed", status_code=500, error="The app answered 500.")
    client = browser(alice)
    html = client.get(page(project, "cron")).content.decode()
    assert "*/10 * * * *" in html and "/api/sweep" in html and "The app answered 500." in html
    assert "Next runs" in html and 'class="table"' in html and "Add a cron job" in html
    resp = client.post(page(project, "cron"), {"schedule": "0 3 * * *", "timezone": "UTC", "path": "/nightly",
                                               "retries": "1"})
    assert resp.status_code == 200
    created = CronJob.objects.get(path="/nightly")
    from platform_app.services.env.crypto import decrypt

    assert decrypt(created.secret_encrypted) in resp.content.decode()
    assert decrypt(created.secret_encrypted) not in client.get(page(project, "cron")).content.decode()
    bad = client.post(page(project, "cron"), {"schedule": "* * *", "timezone": "UTC", "path": "/x", "retries": "0"})
    assert bad.status_code == 400 and CronJob.objects.count() == 2
    toggle = client.post(f"/dashboard/acme/projects/{project.pk}/cron/{created.pk}/disable")
    assert toggle.status_code == 302 and CronJob.objects.get(pk=created.pk).enabled is False


def test_developers_see_but_cannot_change(bob, project):
    job = CronJobFactory(project=project)
    client = browser(bob)
    html = client.get(page(project, "cron")).content.decode()
    assert job.path in html and "Add a cron job" not in html and "Disable" not in html
    assert client.post(page(project, "cron"), {"schedule": "0 3 * * *", "timezone": "UTC", "path": "/n",
                                               "retries": "0"}).status_code == 403
    assert client.post(f"/dashboard/acme/projects/{project.pk}/cron/{job.pk}/delete").status_code == 403
    assert CronJob.objects.count() == 1


def test_other_workspaces_get_404(charlie, project):
    for name in ("cron", "log-drains", "alerts"):
        assert browser(charlie).get(page(project, name)).status_code == 404


def test_drains_page_adds_and_tests(alice, project, httpserver):
    client = browser(alice)
    endpoint = f"http://127.0.0.1:{httpserver.port}/in"
    resp = client.post(page(project, "log-drains"), {"url": endpoint, "format": "ndjson", "sources": ["build"],
                                                     "environments": "production", "sampling_rate": "1"})
    assert resp.status_code == 200 and "Signing secret" in resp.content.decode()
    drain = LogDrain.objects.get()
    assert drain.format == "ndjson" and drain.environments == ["production"]
    httpserver.expect_request("/in").respond_with_data("ok")
    tested = client.post(f"/dashboard/acme/projects/{project.pk}/log-drains/{drain.pk}/test", follow=True)
    assert "Test delivered (200" in tested.content.decode()
    assert json.loads(httpserver.log[0][0].get_data().decode().splitlines()[0])["source"] == "test"
    html = client.get(page(project, "log-drains")).content.decode()
    assert endpoint in html and "delivered" in html and "Send a test" in html
    refused = client.post(page(project, "log-drains"), {"url": "https://10.0.0.1/x", "format": "json",
                                                        "sources": ["build"], "sampling_rate": "1"})
    assert refused.status_code == 400 and LogDrain.objects.count() == 1


def test_alerts_page_shows_open_alerts_and_history(alice, project):
    rule = AlertRuleFactory(project=project, name="Build failures", state="firing")
    AlertFactory(rule=rule, message="deployment_failed is 2", value=2)
    client = browser(alice)
    html = client.get(page(project, "alerts")).content.decode()
    assert "Build failures" in html and "Open since" in html and "deployment_failed is 2" in html
    resp = client.post(page(project, "alerts"), {"name": "Slow", "metric": "edge_p95_latency", "threshold": "800",
                                                 "window_minutes": "10", "emails": "ops@example.com", "webhook": ""})
    assert resp.status_code == 200 and "Webhook secret" in resp.content.decode()
    bad = client.post(page(project, "alerts"), {"name": "x", "metric": "edge_5xx_rate", "threshold": "500",
                                                "window_minutes": "5", "emails": "ops@example.com"})
    assert bad.status_code == 400
    assert sorted(r.name for r in project.alert_rules.all()) == ["Build failures", "Slow"]


def test_alerts_page_defaults_a_count_threshold_to_1(alice, project):
    client = browser(alice)
    resp = client.post(page(project, "alerts"), {"name": "Failures", "metric": "deployment_failed", "threshold": "",
                                                 "window_minutes": "5", "emails": "ops@example.com"})
    assert resp.status_code == 200 and project.alert_rules.get().threshold == 1
    bad = client.post(page(project, "alerts"), {"name": "Slow", "metric": "edge_p95_latency", "threshold": "",
                                                "window_minutes": "5", "emails": "ops@example.com"})
    assert bad.status_code == 400 and "threshold is required" in bad.content.decode()
    assert project.alert_rules.count() == 1
