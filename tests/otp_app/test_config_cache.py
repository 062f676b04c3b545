"""API keys and routing rules are kept in each web process (otp_app/services/config_cache.py): a send reads
them without a query, and any change to a key, a workspace's policy or a routing rule takes effect at once here
and within OTP_LOCAL_CHECK_SECONDS in other processes."""
import pytest
from django.test import Client
from django.utils import timezone

from config.local_cache import MISSING, LocalCache
from otp_app.models import ApiKey, Balance, OtpRecord, RoutingRule
from otp_app.services.config_cache import config
from otp_app.services.keys import otp_key_revoke
from tests.factories import PASSWORD
from tests.otp_app.conftest import PHONE
from tests.otp_app.factories import RoutingRuleFactory, WorkspacePolicyFactory

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def many_sends_per_recipient(settings):
    settings.OTP_SENDS_PER_RECIPIENT = 100  # these tests send to one number again and again


def send(client, **body):
    return client.post("/api/v1/otp/send", {"recipient": PHONE, **body}, format="json")


def refused_with(resp, status, code):
    return resp.status_code == status and resp.json()["error"]["code"] == code


def test_a_key_revoked_in_the_console_is_refused_at_once(sandbox, alice):
    client, key = sandbox
    assert send(client).status_code == 201  # the key is now cached
    console = Client()
    console.post("/dashboard/login/", {"email": alice.email, "password": PASSWORD})
    assert console.post(f"/dashboard/otp/acme/keys/{key.pk}/revoke").status_code == 302
    assert refused_with(send(client), 401, "api_key_revoked")
    assert OtpRecord.objects.count() == 1


def test_a_key_revoked_by_the_service_or_deleted_is_refused_at_once(key_client):
    revoked_client, revoked = key_client("test")
    deleted_client, deleted = key_client("test")
    assert send(revoked_client).status_code == 201 and send(deleted_client).status_code == 201
    otp_key_revoke(key=revoked)
    ApiKey.objects.filter(pk=deleted.pk).get().delete()
    assert refused_with(send(revoked_client), 401, "api_key_revoked")
    assert refused_with(send(deleted_client), 401, "invalid_api_key")


def test_a_revoke_reaches_other_processes_at_their_next_version_check(sandbox, settings):
    settings.OTP_LOCAL_CHECK_SECONDS = 0  # the other process reads the shared version on every lookup
    client, key = sandbox
    other = LocalCache(config.name, ttl=60, check_setting="OTP_LOCAL_CHECK_SECONDS")  # another process's copy
    assert other.get("probe") is MISSING  # reads the current version
    other.set("probe", key)
    assert other.get("probe") is key
    otp_key_revoke(key=key)
    assert other.get("probe") is MISSING


def test_a_new_key_of_a_workspace_works_at_once_and_creating_it_keeps_the_others_cached(key_client):
    client, _ = key_client("test")
    assert send(client).status_code == 201
    cached = len(config._entries)
    second, _ = key_client("test")
    assert len(config._entries) == cached  # a new key cannot be stale anywhere: nothing dropped
    assert send(second).status_code == 201


def test_routing_rule_changes_take_effect_at_once(sandbox, workspace):
    client, _ = sandbox
    assert send(client).json()["channel"] == "whatsapp"  # OTP_DEFAULT_ROUTES, now cached for the workspace
    rule = RoutingRuleFactory(workspace=workspace, country="US", channels=["sms"])
    assert send(client).json()["channel"] == "sms"
    rule.channels = ["email", "console"]  # email never carries a phone code
    rule.save()
    assert send(client).json()["channel"] == "console"
    rule.delete()
    assert send(client).json()["channel"] == "whatsapp"
    assert RoutingRule.objects.count() == 0


def test_a_workspace_policy_created_or_changed_after_a_send_applies_to_the_next(sandbox, workspace):
    client, _ = sandbox
    assert send(client).status_code == 201
    policy = WorkspacePolicyFactory(workspace=workspace, allowed_countries=["DE"])
    assert refused_with(send(client), 403, "country_not_allowed")
    policy.allowed_countries = ["DE", "US"]
    policy.save()
    assert send(client).status_code == 201
    policy.delete()
    assert send(client).status_code == 201
    assert OtpRecord.objects.count() == 3


def test_last_used_at_is_written_at_most_once_a_minute(sandbox, travel):
    client, key = sandbox
    send(client)
    first = ApiKey.objects.get(pk=key.pk).last_used_at
    assert first is not None
    travel(30)
    send(client)
    assert ApiKey.objects.get(pk=key.pk).last_used_at == first
    travel(31)
    send(client)
    assert ApiKey.objects.get(pk=key.pk).last_used_at > first


def test_last_used_at_just_written_by_another_process_is_left_alone(sandbox, travel):
    client, key = sandbox
    send(client)
    travel(61)
    elsewhere = timezone.now()
    ApiKey.objects.filter(pk=key.pk).update(last_used_at=elsewhere)  # another process's touch
    send(client)
    assert ApiKey.objects.get(pk=key.pk).last_used_at == elsewhere


def _state_of(key):
    return (dict(key.__dict__), dict(key._state.fields_cache), dict(key.workspace.__dict__),
            dict(key.workspace._state.fields_cache))


def test_requests_never_change_the_cached_key_or_its_workspace(key_client, settings):
    """Every request of the process shares the cached objects."""
    settings.OTP_CONSOLE_CHANNEL = True
    client, key = key_client("live")  # live: a send also reads, or makes, the workspace's balance
    assert send(client, channel="console").status_code == 201
    cached = config.get(("key", key.key_hash))
    before = _state_of(cached)
    Balance.objects.all().delete()  # the next send makes it again
    assert send(client, channel="console").status_code == 201
    assert client.get("/api/v1/balance").status_code == 200
    assert _state_of(cached) == before and config.get(("key", key.key_hash)) is cached
