"""Lists of cron jobs, drains and alert rules cost the same number of queries for one item as for many: each
item's last run, deliveries and alerts are loaded for the whole list at once."""
import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from tests.platform_app.automation.factories import (AlertFactory, AlertRuleFactory, CronJobFactory, CronRunFactory,
                                                     LogDrainDeliveryFactory, LogDrainFactory)
from tests.platform_app.projects.factories import ProjectFactory

pytestmark = pytest.mark.django_db


def add_items(project):
    job = CronJobFactory(project=project)
    CronRunFactory(job=job)
    drain = LogDrainFactory(project=project)
    LogDrainDeliveryFactory(drain=drain)
    rule = AlertRuleFactory(project=project)
    AlertFactory(rule=rule)


def queries(get, path) -> tuple[int, object]:
    with CaptureQueriesContext(connection) as captured:
        response = get(path)
    assert response.status_code == 200, response.content[:300]
    return len(captured), response


@pytest.mark.parametrize("name", ["cron", "log-drains", "alerts"])
def test_api_lists_do_not_query_per_item(alice, alice_client, workspace, name):
    project = ProjectFactory(workspace=workspace, slug="shop")
    path = f"/v1/orgs/acme/projects/shop/{name}"
    add_items(project)
    one, answer = queries(alice_client.get, path)
    assert len(answer.json()["items"]) == 1
    for _ in range(4):
        add_items(project)
    many, answer = queries(alice_client.get, path)
    assert len(answer.json()["items"]) == 5
    assert many == one


@pytest.mark.parametrize("name", ["cron", "log-drains", "alerts"])
def test_pages_do_not_query_per_item(alice, workspace, name):
    project = ProjectFactory(workspace=workspace, slug="shop")
    client = Client()
    client.force_login(alice)
    path = f"/dashboard/acme/projects/shop/{name}/"
    add_items(project)
    one, _ = queries(client.get, path)
    for _ in range(4):
        add_items(project)
    many, _ = queries(client.get, path)
    assert many == one
