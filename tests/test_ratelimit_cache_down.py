"""Redis unreachable: cache-backed limits fail open (or 503 when a caller asks), sign-in limits live on in
the database. The OTP send route is in tests/otp_app/test_send_limits_cache_down.py."""
import pytest

from config import ratelimit
from config.errors import ServiceUnavailable
from tests.factories import UserFactory
from tests.platform_app.identity.conftest import client_from, sign_in


@pytest.mark.django_db
def test_sign_in_limits_keep_working_without_the_cache(redis_down, settings):
    user = UserFactory()
    client = client_from("203.0.113.5")
    for _ in range(settings.AUTH_FAILURES_PER_ACCOUNT_AND_IP):
        assert sign_in(client, user.email, "wrong-password-1").status_code == 401
    assert sign_in(client, user.email).status_code == 429  # counted in the database
    assert sign_in(client_from("198.51.100.7"), user.email).status_code == 200


def test_a_fail_closed_limit_refuses_with_503(redis_down):
    with pytest.raises(ServiceUnavailable) as refused:
        ratelimit.consume("exports:usr_x", 10, 60, fail_closed=True)
    assert refused.value.status == 503 and refused.value.code == "service_unavailable"
    assert refused.value.headers["Retry-After"]
    ratelimit.consume("exports:usr_x", 10, 60)  # the same limit failing open: allowed
    ratelimit.check("exports:usr_x", 10, 60)
    assert ratelimit.hit("exports:usr_x", 60) == 0
    ratelimit.reset("exports:usr_x", 60)
