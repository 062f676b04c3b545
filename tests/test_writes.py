"""config/writes.py: rows of several models written together, through the models of the OTP service."""
import uuid

import pytest
from django.db import IntegrityError, connection, transaction
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
