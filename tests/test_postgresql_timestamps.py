"""Timestamps read from PostgreSQL are read by psycopg's own loader when the session is in UTC
(config/postgresql/base.py): the same instants Django's loader gave, aware in `datetime.timezone.utc`, to the
microsecond, whatever zone they were written in."""
import datetime
from zoneinfo import ZoneInfo

import pytest
from django.db import connection

from platform_app.models import Deployment
from tests.platform_app.deployments.factories import DeploymentFactory
from tests.platform_app.projects.factories import ProjectFactory

pytestmark = pytest.mark.postgres

UTC = datetime.timezone.utc
PARIS = ZoneInfo("Europe/Paris")


@pytest.fixture
def postgres():
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL (CI sets DATABASE_URL)")


@pytest.mark.parametrize("written", [
    datetime.datetime(2026, 3, 29, 1, 59, 59, 999999, tzinfo=PARIS),  # the last moment before summer time
    datetime.datetime(2026, 3, 29, 3, 0, 0, 1, tzinfo=PARIS),
    datetime.datetime(2026, 10, 25, 2, 30, fold=1, tzinfo=PARIS),  # the hour that happens twice, its second time
    datetime.datetime(1999, 12, 31, 23, 59, 59, tzinfo=UTC),
    datetime.datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
])
def test_a_timestamp_reads_back_as_the_instant_written_in_utc(postgres, alice_client, workspace, written):
    instant = written.astimezone(UTC)  # (a fold=1 time never equals one of another zone in Python: compare in UTC)
    deployment = DeploymentFactory(project=ProjectFactory(workspace=workspace), status="ready")
    Deployment.objects.filter(pk=deployment.pk).update(created_at=written, finished_at=None)
    read = Deployment.objects.get(pk=deployment.pk)
    assert read.created_at == instant and read.created_at.tzinfo is UTC and read.finished_at is None
    answer = alice_client.get(f"/v1/orgs/acme/deployments/{deployment.pk}").json()
    assert answer["createdAt"] == instant.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    with connection.cursor() as cursor:
        cursor.execute("SELECT %s::timestamptz, now()", [written])
        echoed, now = cursor.fetchone()
    assert echoed == instant and echoed.tzinfo is UTC and now.tzinfo is UTC
