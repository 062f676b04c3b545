"""Send limits on a real Redis: one pipelined INCR + EXPIRE NX per limit, readable by config.ratelimit."""

import pytest
from rest_framework.test import APIClient

from config import ratelimit
from otp_app.models import OtpRecord
from tests.otp_app.conftest import PHONE
from tests.otp_app.factories import ApiKeyFactory

pytestmark = [pytest.mark.integration, pytest.mark.django_db]  # the redis_cache fixture skips without REDIS_URL


def test_the_fourth_code_to_one_recipient_is_429_and_the_window_expires(redis_cache, workspace, settings):
    settings.OTP_SENDS_PER_RECIPIENT, settings.OTP_SENDS_PER_RECIPIENT_WINDOW = 3, 600
    raw = "svc_test_redislimit" + "r" * 30
    key = ApiKeyFactory(workspace=workspace, mode="test", raw=raw)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    codes = [client.post("/api/v1/otp/send", {"recipient": PHONE}, format="json").status_code for _ in range(4)]
    assert codes == [201, 201, 201, 429]
    refused = client.post("/api/v1/otp/send", {"recipient": PHONE}, format="json")
    assert refused.json()["error"]["code"] == "recipient_rate_limited"
    assert 1 <= int(refused.headers["Retry-After"]) <= 600
    assert OtpRecord.objects.count() == 3
    # the counters are config.ratelimit's: same keys, plain integers, each with an expiry
    name = f"otp:rcpt:{workspace.pk}:{PHONE}"
    assert ratelimit.hits(name, 600) == 5 and ratelimit.hits(f"otp:key:{key.pk}", 60) == 5
    stored, _ = ratelimit._window(name, 600)
    ttl = redis_cache._cache.get_client(write=True).ttl(redis_cache.make_and_validate_key(stored))
    assert 0 < ttl <= 601
    ratelimit.reset(name, 600)
    assert client.post("/api/v1/otp/send", {"recipient": PHONE}, format="json").status_code == 201


def test_cache_objects_share_one_connection_pool(redis_cache):
    """Django makes a cache object per thread (and per request under ASGI); they draw from one pool."""
    import threading

    from django.core.cache import caches

    pools = []

    def grab():
        caches["default"].set("pool-probe", 1)
        pools.append(caches["default"]._cache._get_connection_pool(write=True))

    threads = [threading.Thread(target=grab) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    grab()
    assert len(pools) == 4 and len({id(p) for p in pools}) == 1


def test_a_send_refused_by_the_key_limit_does_not_count_for_the_recipient(redis_cache, workspace, settings):
    settings.OTP_SENDS_PER_KEY_PER_MINUTE, settings.OTP_SENDS_PER_RECIPIENT = 2, 10
    raw = "svc_test_keylimit" + "k" * 30
    ApiKeyFactory(workspace=workspace, mode="test", raw=raw)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    resps = [client.post("/api/v1/otp/send", {"recipient": PHONE}, format="json") for _ in range(3)]
    assert [r.status_code for r in resps] == [201, 201, 429]
    assert resps[2].json()["error"]["code"] == "rate_limited"
    assert ratelimit.hits(f"otp:rcpt:{workspace.pk}:{PHONE}", settings.OTP_SENDS_PER_RECIPIENT_WINDOW) == 2
