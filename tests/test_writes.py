"""config/writes.py: rows of several models written together, through the models of the OTP service."""
import uuid

import pytest
from django.db import DataError, IntegrityError, connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from config.writes import write_together
from otp_app.models import Delivery, IdempotencyKey, OtpRecord, SandboxMessage
from tests.otp_app.factories import ApiKeyFactory


def _rows(api_key, key):
    record = OtpRecord(api_key=api_key, workspace=api_key.workspace, mode="test", recipient="+14155550100",
                       channel="sms", route=["sms"], code_hash="h" * 64, attempts_left=5,
                       expires_at=timezone.now())
    return record, IdempotencyKey(api_key=api_key, key=key, request_hash="f", record=record), Delivery(
        record=record, send_number=1, channel="sms")


@pytest.mark.django_db
def test_rows_are_stored_as_save_would_and_auto_keys_are_read_back(workspace):
    record, key_row, delivery = _rows(ApiKeyFactory(workspace=workspace), uuid.uuid4())
    write_together(record, key_row, delivery)
    assert delivery.pk is not None and key_row.pk is not None and not delivery._state.adding
    stored = Delivery.objects.select_related("record").get(pk=delivery.pk)
    assert (stored.record.route, stored.status, stored.tries) == (["sms"], "queued", 0)  # JSON and defaults
    assert IdempotencyKey.objects.get(pk=key_row.pk).record_id == record.pk


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_on_postgresql_it_is_one_statement_that_stores_all_or_nothing(workspace):
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL (CI sets DATABASE_URL)")
    api_key, key = ApiKeyFactory(workspace=workspace), uuid.uuid4()
    with CaptureQueriesContext(connection) as captured:
        write_together(*_rows(api_key, key))
    assert len(captured) == 1 and captured[0]["sql"].startswith("WITH")
    with pytest.raises(IntegrityError):  # the same idempotency key: the record and delivery go too
        write_together(*_rows(api_key, key))
    assert (OtpRecord.objects.count(), IdempotencyKey.objects.count(), Delivery.objects.count()) == (1, 1, 1)


@pytest.mark.django_db
def test_a_failure_inside_the_callers_transaction_leaves_that_transaction_usable(workspace):
    api_key, key = ApiKeyFactory(workspace=workspace), uuid.uuid4()
    with transaction.atomic():
        write_together(*_rows(api_key, key))
        with pytest.raises(IntegrityError):
            write_together(*_rows(api_key, key))
        assert OtpRecord.objects.count() == 1  # the caller's transaction still answers
    assert Delivery.objects.count() == 1


@pytest.mark.django_db
def test_updates_store_the_named_fields_of_existing_rows_in_the_same_write(workspace):
    record, key_row, delivery = _rows(ApiKeyFactory(workspace=workspace), uuid.uuid4())
    write_together(record, delivery)
    delivery.status, delivery.tries, delivery.error = "sent", 1, "not stored: not named"
    other = SandboxMessage(api_key_id=record.api_key_id, record=record, channel="sms", recipient=record.recipient,
                           text="Your code is 123456", code="123456")
    write_together(other, updates=[(delivery, ["status", "tries"])])
    stored = Delivery.objects.get(pk=delivery.pk)
    assert (stored.status, stored.tries, stored.error) == ("sent", 1, "")
    assert SandboxMessage.objects.get(pk=other.pk).record_id == record.pk


def _fewer_records_than(n: int) -> tuple[str, list]:
    return f"(SELECT COUNT(*) FROM {OtpRecord._meta.db_table}) < %s", [n]


@pytest.mark.django_db
def test_a_write_only_if_a_condition_holds_writes_nothing_when_it_does_not(workspace):
    api_key = ApiKeyFactory(workspace=workspace)
    record, key_row, delivery = _rows(api_key, uuid.uuid4())
    assert write_together(record, key_row, delivery, only_if=_fewer_records_than(1)) is True
    assert Delivery.objects.get(pk=delivery.pk).record_id == record.pk  # auto keys read back after the condition
    refused = _rows(api_key, uuid.uuid4())
    assert write_together(*refused, only_if=_fewer_records_than(1)) is False
    assert (OtpRecord.objects.count(), IdempotencyKey.objects.count(), Delivery.objects.count()) == (1, 1, 1)
    assert refused[2].pk is None and refused[0]._state.adding
    delivery.status = "sent"
    assert write_together(updates=[(delivery, ["status"])], only_if=_fewer_records_than(1)) is False
    assert Delivery.objects.get(pk=delivery.pk).status == "queued"
    assert write_together(*_rows(api_key, uuid.uuid4()), only_if=_fewer_records_than(2)) is True
    assert OtpRecord.objects.count() == 2


@pytest.mark.postgres
@pytest.mark.django_db
def test_on_postgresql_the_condition_is_read_by_the_same_statement_and_values_keep_their_checks(workspace):
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL (CI sets DATABASE_URL)")
    api_key = ApiKeyFactory(workspace=workspace)
    with CaptureQueriesContext(connection) as captured:
        assert write_together(*_rows(api_key, uuid.uuid4()), only_if=_fewer_records_than(5))
    statements = [q["sql"] for q in captured if q["sql"].startswith("WITH")]
    assert len(statements) == 1 and "guard" in statements[0]
    stored = OtpRecord.objects.get()
    assert (stored.route, stored.attempts_left, stored.mode) == (["sms"], 5, "test")  # JSON, integer, text
    record, key_row, delivery = _rows(api_key, uuid.uuid4())
    record.recipient = "+1" + "5" * 300  # longer than its column: refused, as an INSERT of VALUES would be
    with pytest.raises(DataError):
        write_together(record, key_row, delivery, only_if=_fewer_records_than(5))
    assert OtpRecord.objects.count() == 1


@pytest.mark.django_db
def test_a_take_that_changes_no_row_writes_nothing_and_one_that_does_writes_all(workspace):
    from config.writes import NothingTaken
    from otp_app.models import Balance

    api_key = ApiKeyFactory(workspace=workspace)
    Balance.objects.create(workspace=workspace, amount=3)
    table = connection.ops.quote_name(Balance._meta.db_table)
    hold = lambda: (f'UPDATE {table} SET "amount" = "amount" - %s WHERE "workspace_id" = %s AND "amount" >= %s',  # noqa: E731
                    [2, workspace.pk, 2])
    always, never = ("1 = %s", [1]), ("1 = %s", [2])
    with CaptureQueriesContext(connection) as captured:
        assert write_together(*_rows(api_key, uuid.uuid4()), take=hold(), only_if=always) is True
    if connection.vendor == "postgresql":
        statements = [q["sql"] for q in captured if "SAVEPOINT" not in q["sql"]]
        assert len(statements) == 1 and statements[0].startswith("WITH") and "UPDATE" in statements[0]  # one
    price = Balance.objects.get().amount
    assert price < 3 and OtpRecord.objects.count() == 1
    assert write_together(*_rows(api_key, uuid.uuid4()), take=hold(), only_if=never) is False  # no hold either
    assert Balance.objects.get().amount == price
    Balance.objects.update(amount=0)
    with pytest.raises(NothingTaken):
        write_together(*_rows(api_key, uuid.uuid4()), take=hold())
    assert (OtpRecord.objects.count(), Delivery.objects.count(), Balance.objects.get().amount) == (1, 1, 0)
