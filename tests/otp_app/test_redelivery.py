"""A code whose delivery job never reached the broker is sent again by the beat sweep, with a fresh code
(the job carried the only copy of the first). The same with a real worker and Redis stopped is in
tests/slow/faults/test_faults.py."""
import pytest
from rest_framework.test import APIClient

from otp_app.models import Delivery, SandboxMessage
from otp_app.tasks import deliveries_redeliver_stale
from tests.otp_app.conftest import PHONE

pytestmark = pytest.mark.django_db


@pytest.fixture
def lost_send(sandbox, settings, django_capture_on_commit_callbacks):
    """(client, record id) of a send whose delivery job was lost after the commit."""
    settings.OTP_REDELIVER_AFTER_SECONDS = 60
    client, _ = sandbox
    plain = APIClient()
    plain.credentials(**client._credentials)
    with django_capture_on_commit_callbacks(execute=False):
        resp = plain.post("/api/v1/otp/send", {"recipient": PHONE, "channel": "sms"}, format="json")
    assert resp.status_code == 201 and resp.json()["status"] == "sent"
    return client, resp.json()["id"]


@pytest.fixture
def sweep(django_capture_on_commit_callbacks):
    """The beat task, with its on-commit publishes run as after a real commit."""

    def run() -> int:
        with django_capture_on_commit_callbacks(execute=True):
            return deliveries_redeliver_stale()

    return run


def test_a_lost_delivery_is_sent_again_with_a_fresh_code_that_verifies(lost_send, travel, sweep):
    client, record_id = lost_send
    assert sweep() == 0  # too recent: its job may still be on its way
    assert not SandboxMessage.objects.exists()

    travel(61)
    assert sweep() == 1
    outbox = client.get("/api/v1/sandbox/messages").json()["results"]
    assert [m["otp_id"] for m in outbox] == [record_id]
    deliveries = client.get(f"/api/v1/otp/{record_id}").json()["delivery"]
    assert [(d["channel"], d["status"]) for d in deliveries] == [("sms", "failed"), ("sms", "sent")]
    assert "job queue" in deliveries[0]["error"]
    verify = client.post("/api/v1/otp/verify", {"id": record_id, "code": outbox[0]["code"]}, format="json")
    assert verify.status_code == 200 and verify.json()["verified"] is True
    assert sweep() == 0


def test_a_late_copy_of_the_lost_job_sends_nothing(lost_send, travel, sweep):
    from otp_app.services.codes import code_seal
    from otp_app.tasks import delivery_attempt

    client, record_id = lost_send
    first = Delivery.objects.get(record_id=record_id)
    travel(61)
    sweep()
    assert delivery_attempt(first.pk, code_seal("123456")) == "skipped"  # the broker delivered it after all
    assert SandboxMessage.objects.count() == 1


def test_an_expired_record_is_not_redelivered(lost_send, travel, settings, sweep):
    client, record_id = lost_send
    travel(settings.OTP_CODE_TTL_SECONDS + 1)
    assert sweep() == 0
    assert Delivery.objects.filter(record_id=record_id).count() == 1
