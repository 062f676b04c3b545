"""Deliveries that nothing is going to carry are started again by the beat sweep: one whose wake-up never
reached the broker with the code it holds, one whose drain died after claiming it with a fresh code. The first
with a real worker and Redis stopped is in tests/slow/faults/test_faults.py."""
import pytest
from rest_framework.test import APIClient

from otp_app.models import Delivery, SandboxMessage
from otp_app.services.codes import code_seal
from otp_app.services.drain import _claim
from otp_app.tasks import deliveries_redeliver_stale, delivery_attempt
from tests.otp_app.conftest import PHONE

pytestmark = pytest.mark.django_db


@pytest.fixture
def lost_send(sandbox, settings, django_capture_on_commit_callbacks):
    """(client, record id) of a send whose wake-up was lost after the commit: its delivery waits, sealed."""
    settings.OTP_REDELIVER_AFTER_SECONDS = 60
    settings.OTP_DRAIN_WAKE_SECONDS = 5
    client, _ = sandbox
    plain = APIClient()
    plain.credentials(**client._credentials)
    with django_capture_on_commit_callbacks(execute=False):
        resp = plain.post("/api/v1/otp/send", {"recipient": PHONE, "channel": "sms"}, format="json")
    assert resp.status_code == 201 and resp.json()["status"] == "sent"
    return client, resp.json()["id"]


@pytest.fixture
def dead_drain(lost_send):
    """(client, record id) of a send whose delivery a drain claimed, then died before carrying it."""
    claimed = _claim(50)
    assert [pk for pk, _ in claimed] == list(Delivery.objects.values_list("pk", flat=True))
    assert Delivery.objects.get().sealed_code == ""  # the code left the table with the claim
    return lost_send


@pytest.fixture
def sweep(django_capture_on_commit_callbacks):
    """The beat task, with its on-commit publishes run as after a real commit."""

    def run() -> int:
        with django_capture_on_commit_callbacks(execute=True):
            return deliveries_redeliver_stale()

    return run


def _verify(client, record_id, code):
    return client.post("/api/v1/otp/verify", {"id": record_id, "code": code}, format="json")


def test_a_delivery_whose_wake_up_was_lost_is_sent_with_its_own_code(lost_send, travel, sweep):
    client, record_id = lost_send
    assert sweep() == 0  # too recent: its wake-up may still be on its way
    assert not SandboxMessage.objects.exists()

    travel(6)
    assert sweep() == 1
    outbox = client.get("/api/v1/sandbox/messages").json()["results"]
    assert [m["otp_id"] for m in outbox] == [record_id]
    deliveries = client.get(f"/api/v1/otp/{record_id}").json()["delivery"]
    assert [(d["channel"], d["status"]) for d in deliveries] == [("sms", "sent")]
    assert Delivery.objects.get().sealed_code == ""
    assert _verify(client, record_id, outbox[0]["code"]).json()["verified"] is True
    assert sweep() == 0


def test_a_delivery_claimed_by_a_drain_that_died_gets_a_fresh_code_that_verifies(dead_drain, travel, sweep):
    client, record_id = dead_drain
    travel(6)
    assert sweep() == 0  # claimed a moment ago: that drain may still be sending it
    assert not SandboxMessage.objects.exists()

    travel(61)
    assert sweep() == 1
    outbox = client.get("/api/v1/sandbox/messages").json()["results"]
    assert [m["otp_id"] for m in outbox] == [record_id]
    deliveries = client.get(f"/api/v1/otp/{record_id}").json()["delivery"]
    assert [(d["channel"], d["status"]) for d in deliveries] == [("sms", "failed"), ("sms", "sent")]
    assert "fresh code" in deliveries[0]["error"]
    assert _verify(client, record_id, outbox[0]["code"]).json()["verified"] is True
    assert sweep() == 0


def test_a_late_retry_of_the_closed_delivery_sends_nothing(dead_drain, travel, sweep):
    client, record_id = dead_drain
    first = Delivery.objects.get(record_id=record_id)
    travel(61)
    sweep()
    assert delivery_attempt(first.pk, code_seal("123456")) == "skipped"
    assert SandboxMessage.objects.count() == 1


def test_no_code_goes_out_for_an_expired_record(dead_drain, travel, settings, sweep):
    client, record_id = dead_drain
    travel(settings.OTP_CODE_TTL_SECONDS + 1)
    sweep()
    assert Delivery.objects.filter(record_id=record_id).count() == 1
    assert not SandboxMessage.objects.exists()


def test_an_expired_record_waiting_for_its_wake_up_gets_no_code(lost_send, travel, settings, sweep):
    client, record_id = lost_send
    travel(settings.OTP_CODE_TTL_SECONDS + 1)
    assert sweep() == 1  # the drain is woken, takes the delivery and finds its record expired
    assert not SandboxMessage.objects.exists()
    assert Delivery.objects.get().status == Delivery.Status.QUEUED
    assert _verify(client, record_id, "000000").status_code == 409
