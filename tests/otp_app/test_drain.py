"""The drain: deliveries wait in their table, sealed, and one job carries a whole burst of them
(otp_app/services/drain.py). A burst through a real worker is in test_real_worker.py."""
import json
import threading
import time
from urllib.parse import parse_qs

import pytest
from django.core.cache import cache
from django.db import connection
from pytest_httpserver import HTTPServer
from rest_framework.test import APIClient
from werkzeug.wrappers import Response as WzResponse

from config.cache_flags import flag_lower, flag_raise
from otp_app.models import Delivery, OtpRecord, SandboxMessage
from otp_app.services.drain import WAKE_FLAG, deliveries_wake
from otp_app.tasks import deliveries_drain
from tests.conftest import at_once, closing
from tests.otp_app.factories import ApiKeyFactory, BalanceFactory

ACCOUNT = "AC0123456789abcdef0123456789abcdef"


def _client(raw):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


def _send_while_a_drain_runs(client, count):
    """Sends made while the wake flag is up, as during a burst: they publish nothing and wait in the table."""
    assert flag_raise(WAKE_FLAG, 60)
    ids = []
    for n in range(count):
        resp = client.post("/api/v1/otp/send", {"recipient": f"+1415555{n:04d}", "channel": "sms"}, format="json")
        assert resp.status_code == 201, resp.content
        ids.append(resp.json()["id"])
    assert Delivery.objects.exclude(sealed_code="").count() == count
    return ids


@pytest.mark.django_db
def test_a_burst_waits_sealed_and_one_drain_carries_it_in_batches(workspace, settings):
    settings.OTP_DRAIN_BATCH = 3
    raw = "svc_test_burst" + "b" * 30
    ApiKeyFactory(workspace=workspace, mode="test", raw=raw)
    client = _client(raw)
    ids = _send_while_a_drain_runs(client, 7)
    assert not SandboxMessage.objects.exists()
    assert all(len(d.sealed_code) > 50 for d in Delivery.objects.all())  # sealed, never the 6 digits

    assert deliveries_drain() == 7
    assert set(Delivery.objects.values_list("status", "sealed_code")) == {("sent", "")}
    outbox = {m.record_id: m.code for m in SandboxMessage.objects.all()}
    assert sorted(outbox) == sorted(ids)
    for record_id, code in outbox.items():
        verify = client.post("/api/v1/otp/verify", {"id": record_id, "code": code}, format="json")
        assert verify.json()["verified"] is True
    assert deliveries_drain() == 0  # nothing left, and the flag is down for the next burst
    assert flag_raise(WAKE_FLAG, 60)


@pytest.mark.django_db
def test_a_drain_past_its_time_hands_over_to_a_successor_job(workspace, settings):
    settings.OTP_DRAIN_BATCH, settings.OTP_DRAIN_MAX_SECONDS = 3, 0
    raw = "svc_test_handover" + "h" * 30
    ApiKeyFactory(workspace=workspace, mode="test", raw=raw)
    ids = _send_while_a_drain_runs(_client(raw), 7)
    assert deliveries_drain() == 3  # one batch, then its successor (run inline here, as tasks are) goes on
    assert sorted(SandboxMessage.objects.values_list("record_id", flat=True)) == sorted(ids)
    assert flag_raise(WAKE_FLAG, 60)  # the last of them found nothing and lowered the flag


@pytest.mark.django_db
def test_a_drain_writes_a_batch_of_sandbox_codes_in_a_few_statements(workspace, django_assert_max_num_queries):
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL claims and writes a batch in one statement each (CI sets DATABASE_URL)")
    raw = "svc_test_batch" + "b" * 30
    ApiKeyFactory(workspace=workspace, mode="test", raw=raw)
    _send_while_a_drain_runs(_client(raw), 20)
    # claim, read the deliveries with their records, write 20 outbox rows and 20 updates in one statement (in a
    # savepoint here, inside the test's transaction: two more), then the two empty claims
    with django_assert_max_num_queries(7):
        assert deliveries_drain() == 20
    assert SandboxMessage.objects.count() == 20


@pytest.mark.postgres
def test_drains_running_at_once_carry_each_code_once(transactional_db, workspace, settings):
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL (CI sets DATABASE_URL): SKIP LOCKED between two connections")
    settings.OTP_DRAIN_BATCH = 4
    raw = "svc_test_drains" + "d" * 30
    ApiKeyFactory(workspace=workspace, mode="test", raw=raw)
    ids = _send_while_a_drain_runs(_client(raw), 40)
    claimed = at_once(deliveries_drain, 3)
    assert sum(claimed) == 40
    assert sorted(SandboxMessage.objects.values_list("record_id", flat=True)) == sorted(ids)
    assert set(Delivery.objects.values_list("status", flat=True)) == {"sent"}


@pytest.mark.postgres
def test_live_codes_of_a_batch_go_to_the_provider_side_by_side(transactional_db, workspace, settings):
    """Outside a transaction the drain hands live messages to its threads: a slow provider is waited on
    in parallel, not once per code in turn."""
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL (CI sets DATABASE_URL): the drain's threads read the committed rows")
    server = HTTPServer(threaded=True)
    server.start()
    lock, state = threading.Lock(), {"now": 0, "most": 0}

    def slow_twilio(request):
        with lock:
            state["now"] += 1
            state["most"] = max(state["most"], state["now"])
        time.sleep(0.3)
        with lock:
            state["now"] -= 1
        form = parse_qs(request.get_data(as_text=True))
        return WzResponse(json.dumps({"sid": "SM" + form["To"][0][-4:] * 8, "status": "queued"}), status=201,
                          content_type="application/json")

    try:
        server.expect_request(f"/2010-04-01/Accounts/{ACCOUNT}/Messages.json", method="POST"
                              ).respond_with_handler(slow_twilio)
        settings.TWILIO_BASE_URL = server.url_for("/")
        settings.TWILIO_ACCOUNT_SID, settings.TWILIO_AUTH_TOKEN = ACCOUNT, "twilio-secret"
        settings.TWILIO_FROM = "+15005550006"
        raw = "svc_live_side" + "s" * 30
        ApiKeyFactory(workspace=workspace, mode="live", raw=raw)
        BalanceFactory(workspace=workspace, amount=1000, currency="USD")
        _send_while_a_drain_runs(_client(raw), 4)
        assert deliveries_drain() == 4
        assert len(server.log) == 4
    finally:
        server.clear()
        server.stop()
    assert state["most"] > 1
    assert set(Delivery.objects.values_list("status", flat=True)) == {"sent"}
    assert len(set(Delivery.objects.values_list("provider_message_id", flat=True))) == 4
    assert set(OtpRecord.objects.values_list("status", flat=True)) == {"sent"}


def _redis_calls(cache, command: str) -> int:
    from config.redis_pool import cache_client

    return cache_client(cache).info("commandstats").get(f"cmdstat_{command}", {}).get("calls", 0)


@pytest.mark.django_db
def test_a_send_that_saw_the_drain_running_asks_the_cache_nothing_more(workspace, settings, redis_cache,
                                                                       django_capture_on_commit_callbacks):
    """The wake flag is read in the round trip that counts the rate limits; seen up, and the write committed
    within the grace, the send neither raises it nor publishes: the running drain looks again after lowering
    it. With no grace every send tries to raise it."""
    raw = "svc_test_grace" + "g" * 30
    ApiKeyFactory(workspace=workspace, mode="test", raw=raw)
    client = _client(raw)
    calls = {}
    for grace in (0, 5):
        settings.OTP_DRAIN_WAKE_GRACE_SECONDS = grace
        before = _redis_calls(redis_cache, "set"), _redis_calls(redis_cache, "exists")
        with django_capture_on_commit_callbacks(execute=True):  # the wake-up after each send's commit
            _send_while_a_drain_runs(client, 3)  # raises the flag itself first: one SET
        calls[grace] = (_redis_calls(redis_cache, "set") - before[0], _redis_calls(redis_cache, "exists") - before[1])
        assert deliveries_drain() == 3
    assert calls == {0: (1 + 3, 3), 5: (1, 3)}
    assert SandboxMessage.objects.count() == 6


@pytest.mark.django_db
def test_a_send_that_saw_the_flag_up_too_long_ago_wakes_a_drain_itself(workspace, settings):
    """Its write took longer than the grace: the drain it saw may have looked for the last time already."""
    settings.OTP_DRAIN_WAKE_GRACE_SECONDS = 0.05
    raw = "svc_test_late" + "l" * 30
    ApiKeyFactory(workspace=workspace, mode="test", raw=raw)
    _send_while_a_drain_runs(_client(raw), 1)
    flag_lower(WAKE_FLAG)  # that drain finished without it
    deliveries_wake(drain_seen_at=time.monotonic() - 1)  # the flag is down: raised, and a drain runs (eager)
    assert Delivery.objects.get().status == "sent" and SandboxMessage.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_a_drain_looks_once_more_a_grace_after_lowering_the_flag(workspace, settings):
    """A code written by a send that saw the flag up, committing after the drain lowered it, is still carried
    by that drain: its last look comes OTP_DRAIN_WAKE_GRACE_SECONDS after the lowering."""
    settings.OTP_DRAIN_WAKE_GRACE_SECONDS = 1.0
    raw = "svc_test_last" + "z" * 30
    ApiKeyFactory(workspace=workspace, mode="test", raw=raw)
    assert flag_raise(WAKE_FLAG, 60)
    carried = []

    drain = threading.Thread(target=closing(lambda: carried.append(deliveries_drain())))
    drain.start()
    deadline = time.monotonic() + 5
    while cache.get(WAKE_FLAG) is not None:  # nothing waits: the drain lowers the flag
        assert time.monotonic() < deadline, "the drain never lowered the flag"
        time.sleep(0.005)
    ids = _send_while_a_drain_runs(_client(raw), 1)  # sees the flag up again, as a send that read it earlier would
    drain.join(timeout=10)
    assert carried == [1]
    assert SandboxMessage.objects.get().record_id == ids[0]
