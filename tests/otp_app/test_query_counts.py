"""What one send and one verify cost in SQL statements, through the HTTP API. Delivery runs on the worker in
production, so the send's own request is measured without it (on-commit callbacks are not run here)."""
import functools
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone
from rest_framework.test import APIClient

from otp_app.models import Delivery, IdempotencyKey, OtpRecord, SandboxMessage
from otp_app.services.codes import code_hash
from tests.conftest import all_at_once
from tests.otp_app.conftest import PHONE
from tests.otp_app.factories import ApiKeyFactory

pytestmark = pytest.mark.django_db

RAW = "svc_test_querycount" + "q" * 30
# A send whose key and routing rules the process already holds (otp_app/services/config_cache.py): one statement
# that counts the recipient's failed records and, when there are few enough, inserts the record (code hash
# included), the idempotency key if the request has one, and the delivery (config/writes.py; here inside a
# savepoint and its release, since the test runs in a transaction: on PostgreSQL outside one it is the statement
# alone). Nothing is read for the idempotency-key: the statement takes it. Other databases count first, then take
# one INSERT a row.
SEND_QUERIES = 3 if connection.vendor == "postgresql" else 6
# The first send of a key in a process also reads the key (with its workspace and geo policy) and the
# workspace's routing rules.
COLD_SEND_QUERIES = SEND_QUERIES + 2
# A replay (rare) is a send whose statement fails on the taken key (here its savepoint is rolled back too), then
# reads the idempotency row with its record.
REPLAY_QUERIES = SEND_QUERIES + 2
# One UPDATE ... RETURNING takes the attempt (no transaction, no lock); the key is cached.
VERIFY_QUERIES = 1


@pytest.fixture
def client(workspace):
    ApiKeyFactory(workspace=workspace, mode="test", raw=RAW, last_used_at=timezone.now())
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {RAW}")
    return api


def _send(client, **headers):
    return client.post("/api/v1/otp/send", {"recipient": PHONE}, format="json", **headers)  # routing decides


def test_send_runs_a_fixed_small_number_of_statements(client, django_assert_max_num_queries):
    with django_assert_max_num_queries(COLD_SEND_QUERIES):  # no idempotency key
        assert _send(client).status_code == 201
    with django_assert_max_num_queries(SEND_QUERIES):
        resp = _send(client)
    assert resp.status_code == 201
    record = OtpRecord.objects.get(pk=resp.json()["id"])
    assert len(record.code_hash) == 64 and record.status == "sent"
    assert list(Delivery.objects.filter(record=record).values_list("channel", "status")) == [("whatsapp", "queued")]


def test_send_with_an_idempotency_key_and_its_replay(client, django_assert_max_num_queries):
    key = "1b4d1c3e-2a9f-4f7e-8a61-3d2b9c0e7f15"
    with django_assert_max_num_queries(COLD_SEND_QUERIES):
        first = _send(client, HTTP_IDEMPOTENCY_KEY=key)
    assert first.status_code == 201
    with django_assert_max_num_queries(REPLAY_QUERIES):
        again = _send(client, HTTP_IDEMPOTENCY_KEY=key)
    assert again.status_code == 200 and again.json()["id"] == first.json()["id"]
    assert OtpRecord.objects.count() == 1 and IdempotencyKey.objects.count() == 1
    with django_assert_max_num_queries(SEND_QUERIES):  # a new idempotency key, the key and routes cached
        assert _send(client, HTTP_IDEMPOTENCY_KEY="2c5e2d4f-3b0a-4a8f-9b72-4e3c0d1f8a26").status_code == 201


def test_an_expired_idempotency_key_is_free_again_and_the_sweep_drops_old_ones(client, travel):
    from otp_app.tasks import idempotency_keys_purge

    key = "6f0e2a8c-55a1-4c1b-9a77-0f3e4d5c6b7a"
    first = _send(client, HTTP_IDEMPOTENCY_KEY=key).json()
    _send(client, HTTP_IDEMPOTENCY_KEY="7a1e2a8c-55a1-4c1b-9a77-0f3e4d5c6b7a")
    travel(60 * 60 * 24 + 1)
    later = _send(client, HTTP_IDEMPOTENCY_KEY=key)
    assert later.status_code == 201 and later.json()["id"] != first["id"]
    assert idempotency_keys_purge() == 1  # the other key; the reused one is new
    assert list(IdempotencyKey.objects.values_list("record_id", flat=True)) == [later.json()["id"]]


def test_verify_runs_a_fixed_small_number_of_statements(client, django_assert_max_num_queries):
    record = OtpRecord.objects.get(pk=_send(client).json()["id"])
    record.code_hash = code_hash(record.pk, "123456")  # the code a worker would have delivered
    record.save(update_fields=["code_hash"])
    with django_assert_max_num_queries(VERIFY_QUERIES):  # a wrong code costs one attempt in the same statement
        wrong = client.post("/api/v1/otp/verify", {"id": record.pk, "code": "654321"}, format="json")
    assert wrong.json() == {"id": record.pk, "verified": False, "status": "sent", "attempts_left": 4}
    with django_assert_max_num_queries(VERIFY_QUERIES):
        resp = client.post("/api/v1/otp/verify", {"id": record.pk, "code": "123456"}, format="json")
    assert resp.json() == {"id": record.pk, "verified": True, "status": "verified", "attempts_left": 4}
    record.refresh_from_db()
    assert record.status == "verified" and record.verified_at is not None
    assert SandboxMessage.objects.count() == 0  # nothing was delivered in-process


def test_a_new_prefixed_id_row_is_one_insert(workspace, django_assert_num_queries):
    """A model with a prefixed id saves with a single INSERT (no UPDATE probe first)."""
    from otp_app.models import ApiKey

    key = ApiKey(workspace=workspace, mode="test", prefix="svc_test_x", key_hash="a" * 64,
                 created_at=timezone.now() - timedelta(seconds=1))
    with django_assert_num_queries(1) as captured:
        key.save()
    assert captured.captured_queries[0]["sql"].startswith("INSERT")
    assert key.pk.startswith("key_") and ApiKey.objects.filter(pk=key.pk).exists()


def _verify(record_id: str, code: str):
    api = APIClient()  # a client per thread, as two integrators would have
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {RAW}")
    return api.post("/api/v1/otp/verify", {"id": record_id, "code": code}, format="json")


def _verify_concurrently(codes: list[str], record_id: str) -> list:
    return all_at_once([functools.partial(_verify, record_id, code) for code in codes])


@pytest.mark.postgres
def test_concurrent_verifies_of_one_record_never_double_count(transactional_db, workspace):
    """Without a lock, the write only lands if the record is as read: racing requests fall back to the
    locked path, so one right code verifies once and wrong codes each spend exactly one attempt."""
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL (CI sets DATABASE_URL)")
    ApiKeyFactory(workspace=workspace, mode="test", raw=RAW)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {RAW}")
    right = OtpRecord.objects.get(pk=_send(api).json()["id"])
    OtpRecord.objects.filter(pk=right.pk).update(code_hash=code_hash(right.pk, "123456"))
    results = _verify_concurrently(["123456"] * 4, right.pk)
    assert sorted(r.status_code for r in results) == [200, 409, 409, 409]
    assert {r.json().get("error", {}).get("code") for r in results if r.status_code == 409} == {"otp_already_verified"}
    assert OtpRecord.objects.get(pk=right.pk).status == "verified"

    wrong = OtpRecord.objects.get(pk=_send(api).json()["id"])
    OtpRecord.objects.filter(pk=wrong.pk).update(code_hash=code_hash(wrong.pk, "123456"))
    results = _verify_concurrently(["000000"] * 5, wrong.pk)
    assert sorted(r.json()["attempts_left"] for r in results) == [0, 1, 2, 3, 4]
    wrong.refresh_from_db()
    assert (wrong.status, wrong.attempts_left) == ("failed", 0)
