"""A burst of sends → their deliveries through a real Celery worker on Redis, and two concurrent sends with one
idempotency key on PostgreSQL (the unique constraint, not a read-then-write, stops the second)."""
import os
import time

import pytest
import redis
from django.db import connection
from rest_framework.test import APIClient

from otp_app.models import Delivery, OtpRecord, SandboxMessage
from tests.conftest import at_once
from tests.otp_app.conftest import PHONE
from tests.otp_app.factories import ApiKeyFactory


def _client(raw):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


@pytest.mark.integration
@pytest.mark.skipif(not os.environ.get("REDIS_URL"), reason="needs REDIS_URL (CI sets it)")
def test_a_burst_of_sends_is_one_drain_job_a_real_worker_delivers(transactional_db, workspace, settings):
    """The sends of a burst publish one job on the `codes` queue, and a worker on threads (as the Procfile's
    `codes`) delivers every code of the burst once."""
    from celery.contrib.testing.worker import start_worker

    from config.celery_app import app

    raw = "svc_test_worker" + "w" * 30
    ApiKeyFactory(workspace=workspace, mode="test", raw=raw)
    broker = redis.Redis.from_url(os.environ["REDIS_URL"])
    queued = broker.llen("codes")
    app.conf.task_always_eager = False
    try:
        sent = []
        for n in range(12):
            resp = _client(raw).post("/api/v1/otp/send", {"recipient": f"+1415555{n:04d}", "channel": "sms"},
                                     format="json")
            assert resp.status_code == 201
            sent.append(resp.json()["id"])
        assert broker.llen("codes") == queued + 1
        with start_worker(app, pool="threads", concurrency=4, perform_ping_check=False, shutdown_timeout=10):
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and SandboxMessage.objects.count() < len(sent):
                time.sleep(0.1)
    finally:
        app.conf.task_always_eager = True
    assert set(Delivery.objects.values_list("status", flat=True)) == {"sent"}
    outbox = {m.record_id: m.code for m in SandboxMessage.objects.all()}
    assert sorted(outbox) == sorted(sent) and SandboxMessage.objects.count() == len(sent)
    for record_id in sent[::5]:
        verify = _client(raw).post("/api/v1/otp/verify", {"id": record_id, "code": outbox[record_id]}, format="json")
        assert verify.json()["verified"] is True


@pytest.mark.postgres
def test_two_concurrent_sends_with_one_idempotency_key_make_one_message(transactional_db, workspace):
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL (CI sets DATABASE_URL)")
    raw = "svc_test_race" + "r" * 30
    ApiKeyFactory(workspace=workspace, mode="test", raw=raw)

    def send():
        return _client(raw).post("/api/v1/otp/send", {"recipient": PHONE}, format="json",
                                 HTTP_IDEMPOTENCY_KEY="0b7e5f8e-8f55-4c59-8ad1-6c1f3e4e9a21")

    results = at_once(send, 2)
    assert sorted(r.status_code for r in results) == [200, 201]
    assert len({r.json()["id"] for r in results}) == 1
    assert OtpRecord.objects.count() == 1
    assert SandboxMessage.objects.count() == 1
