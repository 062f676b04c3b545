"""Volume counters (config/ratelimit.py) are atomic without Redis too: parallel requests, each on its own database
connection, never pass a limit. The cache here is the file cache, the one a deployment without Redis has."""
import subprocess
import sys
import time

import pytest
from django.test import Client
from rest_framework.test import APIClient

from config import ratelimit
from otp_app.models import OtpRecord
from platform_app.models import FirewallRule
from tests.conftest import at_once
from tests.otp_app.factories import ApiKeyFactory
from tests.platform_app.edge.conftest import site  # noqa: F401 (fixture)
from tests.platform_app.edge.factories import FirewallRuleFactory
from tests.test_security_headers import ROOT, production_env

WINDOW = 10**9  # no window ends during a test


@pytest.fixture
def file_cache(settings, tmp_path):
    """A deployment without Redis: the file cache, and the counters where such a deployment keeps them."""
    settings.RATELIMIT_STORE = "database"
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
                                   "LOCATION": str(tmp_path / "cache")}}


def test_parallel_sends_to_one_new_number_keep_the_recipient_limit(transactional_db, workspace, settings,
                                                                    file_cache):
    settings.OTP_SENDS_PER_RECIPIENT, settings.OTP_SENDS_PER_RECIPIENT_WINDOW = 3, 10**9
    raw = "svc_test_parallel" + "p" * 30
    ApiKeyFactory(workspace=workspace, mode="test", raw=raw)

    def send():
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
        resp = client.post("/api/v1/otp/send", {"recipient": "+14155550177"}, format="json")
        return resp.status_code

    codes = at_once(send, 25)
    assert sorted(codes) == [201] * 3 + [429] * 22
    assert OtpRecord.objects.count() == 3


def test_parallel_requests_keep_the_firewall_rate_limit(transactional_db, site, file_cache):  # noqa: F811
    FirewallRuleFactory(project=site, action=FirewallRule.Action.RATE_LIMIT,
                        conditions=[{"field": "path", "op": "prefix", "value": "/"}],
                        rate_limit_requests=5, rate_limit_window_seconds=10**9)

    def visit():
        return Client().get("/", HTTP_HOST="site.localhost", REMOTE_ADDR="203.0.113.9").status_code

    assert sorted(at_once(visit, 30)) == [200] * 5 + [429] * 25


def test_counts_given_back_and_reset(db, file_cache):
    limits = [ratelimit.Limit("atomic:a", 2, WINDOW), ratelimit.Limit("atomic:b", 5, WINDOW)]
    ratelimit.consume_all(limits)
    ratelimit.consume_all(limits)
    with pytest.raises(ratelimit.RateLimited):
        ratelimit.consume_all(limits)
    assert (ratelimit.hits("atomic:a", WINDOW), ratelimit.hits("atomic:b", WINDOW)) == (3, 2)
    ratelimit.give_back(limits)
    assert (ratelimit.hits("atomic:a", WINDOW), ratelimit.hits("atomic:b", WINDOW)) == (2, 1)
    ratelimit.reset("atomic:a", WINDOW)
    assert ratelimit.hits("atomic:a", WINDOW) == 0 and ratelimit.hit("atomic:a", WINDOW) == 1
    assert ratelimit.counters_prune() == 0  # their windows have not ended
    assert ratelimit.counters_prune(now=time.time() + WINDOW + 2) == 2 and ratelimit.hits("atomic:b", WINDOW) == 0


@pytest.mark.parametrize("extra, named", [
    ({"RATELIMIT_STORE": "cache", "REDIS_URL": ""}, "REDIS_URL"),
    ({"RATELIMIT_STORE": "memory"}, "RATELIMIT_STORE"),
])
def test_production_refuses_to_start_without_an_atomic_counter_store(tmp_path, extra, named):
    run = subprocess.run([sys.executable, "-c", "import django; django.setup()"], cwd=ROOT, capture_output=True,
                         text=True, env=production_env(tmp_path, **extra))
    assert run.returncode != 0 and "ImproperlyConfigured" in run.stderr and named in run.stderr.splitlines()[-1]
