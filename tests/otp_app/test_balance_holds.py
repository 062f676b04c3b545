"""A live send holds its price on the balance when it is accepted; delivery settles the hold, failure gives it
back, and a fallback holds the next channel's price. The balance never goes below zero."""
import pytest
from django.core import mail
from django.db import connection
from rest_framework.test import APIClient

from otp_app.models import Balance, Charge, Delivery, OtpRecord
from otp_app.services.balance import balance_amount
from otp_app.services.drain import deliveries_drain
from platform_app.models import Workspace
from tests.conftest import at_once
from tests.otp_app.conftest import PHONE
from tests.otp_app.factories import ApiKeyFactory, BalanceFactory
from tests.otp_app.test_channels import MESSAGES_PATH, WA_PATH, providers, twilio_ok  # noqa: F401 (fixture)

pytestmark = pytest.mark.django_db
EMAIL = "someone@example.com"


def balance() -> int:
    return balance_amount(Workspace.objects.get().pk)


def live_client(workspace, name="holds"):
    """A live key's client whose deliveries wait in their table (no drain runs until the test asks)."""
    raw = f"svc_live_{name}" + "h" * 30
    ApiKeyFactory(workspace=workspace, mode="live", raw=raw)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


def test_sends_one_after_another_stop_at_the_balance(workspace, settings):
    settings.OTP_EMAIL_ENABLED, settings.OTP_SENDS_PER_RECIPIENT = True, 10
    BalanceFactory(workspace=workspace, amount=2)  # one email
    client = live_client(workspace)
    codes = [client.post("/api/v1/otp/send", {"recipient": EMAIL}, format="json") for _ in range(5)]
    assert [r.status_code for r in codes] == [201, 402, 402, 402, 402]
    assert {r.json()["error"]["code"] for r in codes[1:]} == {"insufficient_balance"}
    assert balance() == 0 and Delivery.objects.get().reserved == 2  # held before any delivery
    assert deliveries_drain() == 1
    assert len(mail.outbox) == 1 and balance() == 0
    assert list(Charge.objects.values_list("amount", flat=True)) == [2]


def test_a_failed_channel_gives_its_hold_back_and_the_fallback_holds_its_own(providers, key_client, workspace):
    BalanceFactory(workspace=workspace, amount=75)  # WhatsApp (30) then SMS (45)
    client, _ = key_client("live")
    providers.expect_oneshot_request(WA_PATH, method="POST").respond_with_json(
        {"error": {"message": "(#131026) Message undeliverable", "code": 131026}}, status=400)
    providers.expect_oneshot_request(MESSAGES_PATH, method="POST").respond_with_handler(twilio_ok)
    resp = client.post("/api/v1/otp/send", {"recipient": PHONE}, format="json")
    assert resp.status_code == 201
    assert list(Charge.objects.values_list("channel", "amount")) == [("sms", 45)]
    assert balance() == 30 and set(Delivery.objects.values_list("reserved", flat=True)) == {0}


def test_a_fallback_the_balance_cannot_cover_is_not_sent(providers, key_client, workspace):
    BalanceFactory(workspace=workspace, amount=40)  # WhatsApp (30) but not SMS (45)
    client, _ = key_client("live")
    providers.expect_oneshot_request(WA_PATH, method="POST").respond_with_json(
        {"error": {"message": "undeliverable", "code": 131026}}, status=400)
    resp = client.post("/api/v1/otp/send", {"recipient": PHONE}, format="json")
    assert resp.status_code == 201
    status = client.get(f"/api/v1/otp/{resp.json()['id']}").json()
    assert status["status"] == "undeliverable"
    assert [(d["channel"], d["status"]) for d in status["delivery"]] == [("whatsapp", "failed"), ("sms", "failed")]
    assert "balance" in status["delivery"][1]["error"]
    assert len(providers.log) == 1 and Charge.objects.count() == 0 and balance() == 40


def test_every_channel_failing_gives_the_whole_hold_back(providers, key_client, workspace):
    BalanceFactory(workspace=workspace, amount=100)
    client, _ = key_client("live")
    providers.expect_request(WA_PATH, method="POST").respond_with_json({"error": {"message": "bad"}}, status=400)
    providers.expect_request(MESSAGES_PATH, method="POST").respond_with_json({"code": 21211, "message": "bad"},
                                                                             status=400)
    record_id = client.post("/api/v1/otp/send", {"recipient": PHONE}, format="json").json()["id"]
    assert OtpRecord.objects.get(pk=record_id).status == "undeliverable"
    assert balance() == 100 and Charge.objects.count() == 0


def test_a_resend_holds_its_price_and_is_refused_when_the_balance_cannot(workspace, settings, travel):
    settings.OTP_EMAIL_ENABLED = True
    BalanceFactory(workspace=workspace, amount=5)
    client = live_client(workspace)
    record_id = client.post("/api/v1/otp/send", {"recipient": EMAIL}, format="json").json()["id"]
    travel(31)
    assert client.post("/api/v1/otp/resend", {"id": record_id}, format="json").status_code == 200
    assert balance() == 1
    travel(31)
    resp = client.post("/api/v1/otp/resend", {"id": record_id}, format="json")
    assert resp.status_code == 402 and resp.json()["error"]["code"] == "insufficient_balance"
    assert balance() == 1 and OtpRecord.objects.get().sends == 2
    # the first send's delivery is no longer the record's latest: it is never carried and its hold comes back
    assert deliveries_drain() == 2
    assert len(mail.outbox) == 1 and balance() == 3 and list(Charge.objects.values_list("amount", flat=True)) == [2]


@pytest.mark.postgres
def test_concurrent_live_sends_never_overdraw(transactional_db, workspace, settings):
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL (CI sets DATABASE_URL): sends racing on one balance row")
    settings.OTP_EMAIL_ENABLED, settings.OTP_SENDS_PER_RECIPIENT = True, 100
    BalanceFactory(workspace=workspace, amount=2)
    raw = "svc_live_overdraw" + "o" * 30
    ApiKeyFactory(workspace=workspace, mode="live", raw=raw)

    def send():
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
        resp = client.post("/api/v1/otp/send", {"recipient": EMAIL}, format="json")
        return resp.status_code, resp.json().get("error", {}).get("code")

    results = at_once(send, 10)
    assert sorted(results) == [(201, None)] + [(402, "insufficient_balance")] * 9
    assert OtpRecord.objects.count() == 1 and balance() == 0


def test_a_drain_settles_a_batch_of_live_deliveries_in_one_statement(workspace, settings):
    """The providers are called side by side; what they accepted is then marked sent and charged together, so the
    drain's statements do not grow with the batch (PostgreSQL; elsewhere the rows are saved one by one)."""
    from django.test.utils import CaptureQueriesContext

    settings.OTP_EMAIL_ENABLED, settings.OTP_SENDS_PER_RECIPIENT = True, 10
    BalanceFactory(workspace=workspace, amount=100)
    client = live_client(workspace)
    for n in range(8):
        assert client.post("/api/v1/otp/send", {"recipient": f"r{n}@example.com"}, format="json").status_code == 201
    with CaptureQueriesContext(connection) as queries:
        assert deliveries_drain() == 8
    assert sorted(m.to[0] for m in mail.outbox) == sorted(f"r{n}@example.com" for n in range(8))
    assert set(Delivery.objects.values_list("status", "reserved")) == {("sent", 0)}
    assert Charge.objects.count() == 8 and {c.amount for c in Charge.objects.all()} == {2} and balance() == 84
    if connection.vendor == "postgresql":
        writes = [q["sql"] for q in queries.captured_queries if q["sql"].startswith(("INSERT", "UPDATE", "WITH"))]
        assert len(writes) <= 4, writes  # the claim(s) and the one settling statement


def test_a_delivery_charged_before_keeps_its_one_charge(workspace, settings):
    """A retried job's delivery already has its charge: the batch falls back to one delivery at a time, each
    sent, the charged one not charged twice."""
    from otp_app.services.delivery import deliveries_sent

    settings.OTP_EMAIL_ENABLED, settings.OTP_SENDS_PER_RECIPIENT = True, 10
    BalanceFactory(workspace=workspace, amount=100)
    client = live_client(workspace)
    for n in range(2):
        assert client.post("/api/v1/otp/send", {"recipient": f"c{n}@example.com"}, format="json").status_code == 201
    first, second = Delivery.objects.select_related("record").order_by("pk")
    Charge.objects.create(workspace_id=workspace.pk, delivery=first, channel="email", amount=2, currency="USD")
    deliveries_sent([(first, "m-1"), (second, "m-2")])
    assert set(Delivery.objects.values_list("status", flat=True)) == {"sent"}
    assert sorted(Charge.objects.values_list("delivery_id", flat=True)) == [first.pk, second.pk]
    assert balance() == 96  # both held at send time, nothing more taken


def test_staff_adjust_a_balance_by_an_amount_and_keep_the_holds_taken_meanwhile(workspace, settings, client):
    """The admin page changes the balance by an amount applied to the row as it is when saved: a form loaded before
    a send cannot give that send's hold back. Below zero is refused and changes nothing."""
    from tests.factories import SuperuserFactory

    settings.OTP_EMAIL_ENABLED = True
    balance_row = BalanceFactory(workspace=workspace, amount=100)
    client.force_login(SuperuserFactory())
    url = f"/admin/otp_app/balance/{balance_row.pk}/change/"
    page = client.get(url)
    assert page.status_code == 200 and b"adjust_by" in page.content
    assert live_client(workspace).post("/api/v1/otp/send", {"recipient": EMAIL}, format="json").status_code == 201
    assert balance() == 98  # held while the form was open
    saved = client.post(url, {"adjust_by": "50"})
    assert saved.status_code == 302, saved.content[:2000]
    assert balance() == 148
    refused = client.post(url, {"adjust_by": "-500"})
    assert refused.status_code == 200 and b"cannot go below zero" in refused.content
    assert balance() == 148
    assert client.post(url, {"adjust_by": "-148"}).status_code == 302 and balance() == 0
    # past a 32-bit integer the change is whole (PostgreSQL would wrap a 4-byte parameter); past the bound, refused
    assert client.post(url, {"adjust_by": "3000000000"}).status_code == 302 and balance() == 3_000_000_000
    too_much = client.post(url, {"adjust_by": str(10 ** 16)})
    assert too_much.status_code == 200 and b"adjust_by" in too_much.content and balance() == 3_000_000_000


def top_up(client, balance_row, amount: int):
    """Staff add to a workspace's balance on its admin page (balance_top_up)."""
    saved = client.post(f"/admin/otp_app/balance/{balance_row.pk}/change/", {"adjust_by": str(amount)})
    assert saved.status_code == 302, saved.content[:2000]


def test_a_top_up_spreads_the_balance_over_purses_that_sends_and_reports_add_up(workspace, settings, client):
    from tests.factories import SuperuserFactory

    settings.OTP_EMAIL_ENABLED, settings.OTP_BALANCE_PURSES, settings.OTP_SENDS_PER_RECIPIENT = True, 4, 100
    client.force_login(SuperuserFactory())
    balance_row = BalanceFactory(workspace=workspace, amount=3)
    top_up(client, balance_row, 100)
    assert list(Balance.objects.order_by("purse").values_list("purse", "amount")) == [(0, 28), (1, 25), (2, 25),
                                                                                      (3, 25)]
    live = live_client(workspace)
    for _ in range(3):
        assert live.post("/api/v1/otp/send", {"recipient": EMAIL}, format="json").status_code == 201
    report = live.get("/api/v1/balance").json()
    assert report["balance"] == 97 and balance() == 97
    changelist = client.get("/admin/otp_app/balance/")
    assert changelist.status_code == 200 and b"97" in changelist.content
    assert client.post(f"/admin/otp_app/balance/{balance_row.pk}/change/", {"adjust_by": "-98"}).status_code == 200
    assert balance() == 97  # below zero across all purses: refused, nothing changed
    deleted = client.post(f"/admin/otp_app/balance/{balance_row.pk}/delete/", {"post": "yes"})
    assert deleted.status_code == 302 and not Balance.objects.exists()  # the balance is all of its purses


def test_purses_each_short_of_the_price_are_gathered_for_a_send(workspace, settings, client):
    from tests.factories import SuperuserFactory

    settings.OTP_EMAIL_ENABLED, settings.OTP_BALANCE_PURSES, settings.OTP_SENDS_PER_RECIPIENT = True, 8, 100
    client.force_login(SuperuserFactory())
    top_up(client, BalanceFactory(workspace=workspace, amount=0), 9)  # 2, then 1 in each of the other seven
    live = live_client(workspace)
    codes = [live.post("/api/v1/otp/send", {"recipient": EMAIL}, format="json").status_code for _ in range(6)]
    assert codes == [201, 201, 201, 201, 402, 402]
    assert balance() == 1 and sorted(Delivery.objects.values_list("reserved", flat=True)) == [2, 2, 2, 2]
    assert min(Balance.objects.values_list("amount", flat=True)) == 0  # no purse below zero


@pytest.mark.postgres
def test_a_send_holds_its_price_on_a_purse_no_other_send_has_locked(transactional_db, workspace, settings, client):
    """A send waits for no other: with the first purse locked by a send in flight, the next takes another."""
    import psycopg
    from tests.factories import SuperuserFactory

    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL (CI sets DATABASE_URL): row locks")
    settings.OTP_EMAIL_ENABLED, settings.OTP_BALANCE_PURSES = True, 4
    client.force_login(SuperuserFactory())
    top_up(client, BalanceFactory(workspace=workspace, amount=0), 40)
    db = connection.settings_dict
    with psycopg.connect(dbname=db["NAME"], host=db["HOST"], port=db["PORT"] or None, user=db["USER"],
                         password=db["PASSWORD"] or None) as other:  # a send in flight, holding the first purse until it commits
        other.execute("SELECT 1 FROM otp_app_balance WHERE workspace_id = %s AND purse = 0 FOR UPDATE",
                      [workspace.pk])
        with connection.cursor() as cursor:
            cursor.execute("SET lock_timeout = '2s'")  # a send that waited would fail, not hang
        resp = live_client(workspace).post("/api/v1/otp/send", {"recipient": EMAIL}, format="json")
        other.rollback()
    assert resp.status_code == 201, resp.content
    assert list(Balance.objects.order_by("purse").values_list("amount", flat=True)) == [10, 8, 10, 10]


@pytest.mark.postgres
def test_concurrent_live_sends_spend_a_spread_balance_exactly(transactional_db, workspace, settings, client):
    from tests.factories import SuperuserFactory

    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL (CI sets DATABASE_URL): sends racing on the balance's purses")
    settings.OTP_EMAIL_ENABLED, settings.OTP_SENDS_PER_RECIPIENT, settings.OTP_BALANCE_PURSES = True, 100, 8
    client.force_login(SuperuserFactory())
    top_up(client, BalanceFactory(workspace=workspace, amount=0), 10)  # 3, then 1 in each of the other seven
    raw = "svc_live_spread" + "s" * 30
    ApiKeyFactory(workspace=workspace, mode="live", raw=raw)

    def send():
        api = APIClient()
        api.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
        return api.post("/api/v1/otp/send", {"recipient": EMAIL}, format="json").status_code

    assert sorted(at_once(send, 10)) == [201] * 5 + [402] * 5
    assert balance() == 0 and OtpRecord.objects.count() == 5
    assert min(Balance.objects.values_list("amount", flat=True)) == 0
