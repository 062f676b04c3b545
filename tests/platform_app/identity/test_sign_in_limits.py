"""Sign-in brute-force limits, counted atomically in the database before the password is checked:
per (account, address) a hard limit, per account a ceiling with growing delays, per address a ceiling across
accounts; a success resets the pair. The concurrent race runs here on PostgreSQL, and against a SQLite file
in test_sign_in_race_sqlite.py."""
import pytest
from django.db import connection

from platform_app.models import AttemptCounter, AuthSession
from tests.factories import PASSWORD, UserFactory
from tests.platform_app.identity.conftest import OWNER, STRANGER, client_from, counted, race, sign_in


def assert_race_stopped_then_owner_signs_in(user, settings, travel):
    limit = settings.AUTH_FAILURES_PER_ACCOUNT_AND_IP
    statuses = race(20, STRANGER, lambda c: sign_in(c, user.email, "wrong-password-1"))
    assert statuses.count(401) == limit and statuses.count(429) == 20 - limit
    # refused attempts are not counted anywhere: the rows hold exactly the checked ones
    assert counted(f"signin:pair:{user.email}|{STRANGER}") == limit
    assert counted(f"signin:acct:{user.email}") == limit
    assert counted(f"signin:ip:{STRANGER}") == limit

    resp = sign_in(client_from(OWNER), user.email)
    assert resp.status_code == 200 and resp.json()["accessToken"] and resp.json()["refreshToken"]
    assert AuthSession.objects.get(user=user).ip == OWNER

    refused = sign_in(client_from(STRANGER), user.email)  # even the right password, from that address
    assert refused.status_code == 429
    travel(settings.AUTH_FAILURE_WINDOW_SECONDS)
    assert sign_in(client_from(STRANGER), user.email).status_code == 200


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_wrong_passwords_on_postgresql(clock, travel, settings):
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL (CI sets DATABASE_URL); the SQLite variant is test_sign_in_race_sqlite.py")
    assert_race_stopped_then_owner_signs_in(UserFactory(), settings, travel)


# The rule, one request at a time ---------------------------------------------------------------

@pytest.mark.django_db
def test_a_strangers_guesses_do_not_lock_the_owner_out(clock, settings):
    user = UserFactory()
    stranger = client_from(STRANGER)
    for _ in range(settings.AUTH_FAILURES_PER_ACCOUNT_AND_IP):
        assert sign_in(stranger, user.email, "wrong-password-1").status_code == 401
    resp = sign_in(stranger, user.email, "wrong-password-1")
    assert resp.status_code == 429
    body = resp.json()
    assert body["code"] == "rate_limited" and body["status"] == 429
    assert body["details"]["retryAfter"] == int(resp["Retry-After"]) == settings.AUTH_FAILURE_WINDOW_SECONDS - 1
    assert sign_in(client_from(OWNER), user.email).status_code == 200
    assert AuthSession.objects.filter(user=user).count() == 1


@pytest.mark.django_db
def test_success_resets_the_pair(clock, settings):
    user = UserFactory()
    client = client_from(OWNER)
    limit = settings.AUTH_FAILURES_PER_ACCOUNT_AND_IP
    for _ in range(limit - 1):
        assert sign_in(client, user.email, "typo-password-1").status_code == 401
    assert sign_in(client, user.email).status_code == 200
    assert not AttemptCounter.objects.filter(key=f"signin:pair:{user.email}|{OWNER}").exists()
    assert counted(f"signin:acct:{user.email}") == limit - 1  # the success gave its own attempt back
    for _ in range(limit):
        assert sign_in(client, user.email, "typo-password-1").status_code == 401
    assert sign_in(client, user.email).status_code == 429


@pytest.mark.django_db
def test_unknown_email_and_wrong_password_get_the_same_answer_and_both_count(clock):
    user = UserFactory()
    client = client_from(STRANGER)
    unknown, wrong = sign_in(client, "nobody@example.com", "wrong-password-1"), sign_in(client, user.email, "x" * 12)
    assert unknown.status_code == wrong.status_code == 401
    assert unknown.json() == wrong.json()
    assert counted(f"signin:pair:nobody@example.com|{STRANGER}") == counted(f"signin:pair:{user.email}|{STRANGER}") == 1


@pytest.mark.django_db
def test_account_ceiling_slows_with_growing_delays_and_never_locks(clock, travel, settings):
    settings.AUTH_FAILURES_PER_ACCOUNT, settings.AUTH_SLOWDOWN_BASE_SECONDS = 3, 2
    user = UserFactory()
    for n in range(3):  # a botnet: every guess from another address
        assert sign_in(client_from(f"192.0.2.{n + 1}"), user.email, "wrong-password-1").status_code == 401
    delays = []
    for n in range(3):
        # past the ceiling one attempt goes through, then the next one waits twice as long as the last
        assert sign_in(client_from(f"192.0.2.{n + 10}"), user.email, "wrong-password-1").status_code == 401
        resp = sign_in(client_from(f"192.0.2.{n + 20}"), user.email)
        assert resp.status_code == 429 and resp.json()["code"] == "rate_limited"
        delays.append(int(resp["Retry-After"]))
        assert resp.json()["details"]["retryAfter"] == delays[-1]
        travel(delays[-1])
    assert delays == [2, 4, 8]
    row = AttemptCounter.objects.get(key=f"signin:acct:{user.email}")
    assert (row.count, row.slowed) == (3, 3)
    # the owner waits out the delay and gets in: a slowdown, never a lock
    assert sign_in(client_from(OWNER), user.email).status_code == 200


@pytest.mark.django_db
def test_slowdown_delay_is_capped(clock, travel, settings):
    settings.AUTH_FAILURES_PER_ACCOUNT, settings.AUTH_SLOWDOWN_BASE_SECONDS = 1, 2
    settings.AUTH_SLOWDOWN_MAX_SECONDS = 5
    user = UserFactory()
    assert sign_in(client_from("192.0.2.1"), user.email, "wrong-password-1").status_code == 401  # the ceiling
    delays = []
    for n in range(4):
        assert sign_in(client_from(f"192.0.2.{n + 10}"), user.email, "wrong-password-1").status_code == 401
        resp = sign_in(client_from(f"192.0.2.{n + 100}"), user.email, "wrong-password-1")
        assert resp.status_code == 429
        delays.append(int(resp["Retry-After"]))
        travel(delays[-1])
    assert delays == [2, 4, 5, 5]


@pytest.mark.django_db
def test_per_address_ceiling_across_accounts(clock, settings):
    settings.AUTH_FAILURES_PER_IP = 3
    stuffer = client_from(STRANGER)
    for n in range(3):
        assert sign_in(stuffer, f"someone{n}@example.com", "leaked-password-1").status_code == 401
    user = UserFactory()
    resp = sign_in(stuffer, user.email)
    assert resp.status_code == 429 and int(resp["Retry-After"]) > 0
    assert counted(f"signin:ip:{STRANGER}") == 3
    assert counted(f"signin:pair:{user.email}|{STRANGER}") == 0  # a refused attempt counts nowhere
    assert sign_in(client_from(OWNER), user.email).status_code == 200


@pytest.mark.django_db
def test_ipv6_addresses_of_one_subscriber_share_a_counter(clock, settings):
    user = UserFactory()
    limit = settings.AUTH_FAILURES_PER_ACCOUNT_AND_IP
    for n in range(limit):
        assert sign_in(client_from(f"2001:db8:1:2::{n + 1:x}"), user.email, "wrong-password-1").status_code == 401
    assert sign_in(client_from("2001:db8:1:2:ffff::9"), user.email).status_code == 429  # same /64
    assert counted(f"signin:pair:{user.email}|2001:db8:1:2::/64") == limit
    assert sign_in(client_from("2001:db8:1:3::1"), user.email).status_code == 200  # another /64


@pytest.mark.django_db
def test_warehouse_login_shares_the_counters(clock, settings):
    user = UserFactory()
    stranger = client_from(STRANGER)
    for _ in range(settings.AUTH_FAILURES_PER_ACCOUNT_AND_IP):
        resp = stranger.post("/api/auth/login", {"email": user.email, "password": "wrong-wrong-1"}, format="json")
        assert resp.status_code == 401
    resp = stranger.post("/api/auth/login", {"email": user.email, "password": PASSWORD}, format="json")
    assert resp.status_code == 429 and resp.json()["code"] == "rate_limited" and "Retry-After" in resp
    assert sign_in(stranger, user.email).status_code == 429  # the platform sign-in counts the same pair
    resp = client_from(OWNER).post("/api/auth/login", {"email": user.email, "password": PASSWORD}, format="json")
    assert resp.status_code == 200


@pytest.mark.django_db
def test_old_windows_are_swept(clock, travel, settings):
    from platform_app.tasks.identity import attempt_counters_prune

    user = UserFactory()
    sign_in(client_from(STRANGER), user.email, "wrong-password-1")
    assert AttemptCounter.objects.count() == 3
    assert attempt_counters_prune() == 0
    travel(settings.AUTH_FAILURE_WINDOW_SECONDS + 1)
    sign_in(client_from(OWNER), "other@example.com", "wrong-password-1")
    assert attempt_counters_prune() == 3
    assert set(AttemptCounter.objects.values_list("key", flat=True)) == {
        "signin:pair:other@example.com|" + OWNER, "signin:acct:other@example.com", "signin:ip:" + OWNER}
    assert "attempt-counters-sweep" in settings.CELERY_BEAT_SCHEDULE


@pytest.mark.django_db
def test_wrong_current_passwords_are_counted_like_sign_ins(clock, settings):
    from tests.warehouse_app.conftest import logged_in

    user = UserFactory()
    client = logged_in(user)  # from 127.0.0.1, like every test client
    body = {"current_password": "guessed-password-1", "new_password": "Another-pass-99"}
    for _ in range(settings.AUTH_FAILURES_PER_ACCOUNT_AND_IP):
        assert client.post("/api/account/password", body, format="json").status_code == 400
    assert counted(f"signin:pair:{user.email}|127.0.0.1") == settings.AUTH_FAILURES_PER_ACCOUNT_AND_IP
    refused = client.post("/api/account/password", {**body, "current_password": PASSWORD}, format="json")
    assert refused.status_code == 429 and "Retry-After" in refused
    user.refresh_from_db()
    assert user.check_password(PASSWORD)
