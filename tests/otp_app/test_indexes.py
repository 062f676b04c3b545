"""The OTP tables a send writes carry only the indexes their queries use, and those queries are served by them.

Every index is written on every insert (and on every update of an indexed column), so an index nothing reads is
a cost each send pays: PostgreSQL's implicit LIKE companions of varchar keys and single-column indexes that a
composite one already leads were two thirds of what a send wrote (docs/otp.md, "Indexes")."""
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from otp_app.models import Delivery, OtpRecord
from otp_app.services import console, delivery, records
from tests.otp_app.conftest import PHONE
from tests.otp_app.factories import ApiKeyFactory, OtpRecordFactory

pytestmark = [pytest.mark.postgres, pytest.mark.django_db]

INDEXES = {
    "otp_app_otprecord": {"otp_app_otprecord_pkey", "otp_app_otp_status_314f0f_idx", "otp_app_otp_recipie_f16b14_idx",
                          "otp_record_workspace_list", "otp_record_api_key", "otp_app_otprecord_created_at_544e4597"},
    "otp_app_idempotencykey": {"otp_app_idempotencykey_pkey", "otp_idempotency_unique", "otp_idempotency_record",
                               "otp_app_idempotencykey_created_at_16132c82"},
    "otp_app_delivery": {"otp_app_delivery_pkey", "otp_delivery_pending", "otp_delivery_record",
                         "otp_delivery_provider_id"},
    "otp_app_sandboxmessage": {"otp_app_sandboxmessage_pkey", "otp_sandbox_key_outbox", "otp_sandbox_record"},
    "otp_app_charge": {"otp_app_charge_pkey", "otp_app_charge_delivery_id_key", "otp_charge_workspace_month"},
}


@pytest.fixture(autouse=True)
def _postgresql():
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL (CI sets DATABASE_URL)")


def test_the_tables_a_send_writes_carry_only_the_indexes_queries_use():
    with connection.cursor() as cursor:
        cursor.execute("SELECT tablename, indexname FROM pg_indexes WHERE tablename = ANY(%s)", [list(INDEXES)])
        found = {}
        for table, index in cursor.fetchall():
            found.setdefault(table, set()).add(index)
    assert found == INDEXES


def _plans(run) -> list[str]:
    """The plans of the statements `run` sends, with sequential scans priced out: on a table of a few rows
    the planner would rather read it whole, and the question is whether an index can answer."""
    with CaptureQueriesContext(connection) as ctx:
        run()
    plans = []
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        for query in ctx.captured_queries:
            if query["sql"].startswith(("SAVEPOINT", "RELEASE", "ROLLBACK")):
                continue
            cursor.execute(f"EXPLAIN {query['sql']}")
            plans.append("\n".join(row[0] for row in cursor.fetchall()))
    return plans


def test_the_queries_of_codes_and_their_lists_are_served_by_indexes(workspace):
    from otp_app.services.balance import balance_for, balance_report

    key = ApiKeyFactory(workspace=workspace, mode="test")
    live = ApiKeyFactory(workspace=workspace, mode="live")
    balance_for(workspace)  # the row exists: the report reads it
    record = OtpRecordFactory(api_key=key, status="failed", created_at=timezone.now() - timedelta(hours=1))
    Delivery.objects.create(record=record, send_number=1, channel="sms", provider_message_id="SM1")
    shapes = {
        "send, with the failed-records rule": lambda: records.otp_send(api_key=key, recipient=PHONE, locale="en",
                                                                       channel="sms"),
        "a workspace's records and their deliveries": lambda: list(console.records_log(workspace=workspace)[:50]),
        "a key's sandbox outbox": lambda: list(console.sandbox_messages_of(api_key=key)),
        "a live key's month of charges": lambda: balance_report(api_key=live),
        "the expiry sweep": records.otp_expire_due,
        "the idempotency-key sweep": records.idempotency_keys_purge,
        "a provider's status callback": lambda: delivery.delivery_status_update(provider_message_id="SM1",
                                                                                provider_status="delivered"),
    }
    for shape, run in shapes.items():
        plans = _plans(run)
        assert plans, shape
        for plan in plans:
            assert "Seq Scan" not in plan and "Index" in plan, f"{shape}\n{plan}"
    # newest first is the index's order read backwards (the records' deliveries, a page's few, are sorted)
    lists = [_plans(lambda: list(console.records_log(workspace=workspace)[:50]))[0],
             _plans(lambda: list(console.sandbox_messages_of(api_key=key)))[0]]
    assert not [plan for plan in lists if "Sort" in plan], lists
    assert OtpRecord.objects.filter(api_key=key).count() == 2  # (the charges' plan is the month's, per workspace)
