"""Attempt limits for secrets (sign-in passwords, MFA codes, preview passwords), counted in the database.

An attempt is counted *before* the secret is checked, by one upsert that increments the window's row only
while it is under the limit and returns the new count (or nothing when the window is full): counting and
deciding are a single statement, so N concurrent attempts get at most `limit` checks, on SQLite and
PostgreSQL alike, and nothing depends on the cache being up.

A limit either refuses past its count until the window ends (429 with Retry-After), or, when `slow`, keeps
letting attempts through one at a time with doubling delays (capped): used where a refusal would let
strangers lock an owner out.
"""
import hashlib
import ipaddress
import math
import time
from dataclasses import dataclass, field

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F

from config.errors import RateLimited
from platform_app.models import AttemptCounter

KEY_MAX = 400


@dataclass(frozen=True)
class Limit:
    key: str
    limit: int
    window: int
    slow: bool = False  # past the limit: growing delays instead of a refusal until the window ends
    reset_on_success: bool = False  # success wipes the window (else success only gives its attempt back)


@dataclass
class Admission:
    """The rows an admitted attempt was counted in, so that a success can give it back."""

    rows: list[tuple[Limit, int, bool]] = field(default_factory=list)  # (limit, window start, let through slowed)


def address_key(ip: str) -> str:
    """The address part of a key: IPv6 by /64 (one subscriber), IPv4 as is."""
    try:
        address = ipaddress.ip_address(ip)
    except ValueError:
        return ip or "unknown"
    if address.version == 6:
        return str(ipaddress.ip_network(f"{address}/64", strict=False))
    return str(address)


def _key(key: str) -> str:
    if len(key) <= KEY_MAX:
        return key
    return key[:KEY_MAX - 65] + "#" + hashlib.sha256(key.encode()).hexdigest()


def _upsert_sql() -> str:
    q = connection.ops.quote_name
    table, key, start, expires, count, slowed = (q(n) for n in (
        AttemptCounter._meta.db_table, "key", "window_start", "expires_at", "count", "slowed"))
    # SQLite >= 3.35 and PostgreSQL: the row is created, or incremented only while under the limit.
    return (f"INSERT INTO {table} AS c ({key}, {start}, {expires}, {count}, {slowed}) VALUES (%s, %s, %s, 1, 0) "
            f"ON CONFLICT ({key}, {start}) DO UPDATE SET {count} = c.{count} + 1 WHERE c.{count} < %s "
            f"RETURNING {count}")


def _count(key: str, start: int, limit: int, expires_at: int) -> int | None:
    """Count one attempt when the window holds fewer than `limit`; None (nothing written) when it is full."""
    with connection.cursor() as cursor:
        cursor.execute(_upsert_sql(), [key, start, expires_at, limit])
        row = cursor.fetchone()
    return row[0] if row else None


def _delay(slowed: int) -> float:
    return min(settings.AUTH_SLOWDOWN_MAX_SECONDS, settings.AUTH_SLOWDOWN_BASE_SECONDS * 2 ** min(slowed, 32))


def _slow_slot(key: str, start: int, window_end: int, now: float, message: str, code: str) -> None:
    """Past a slow limit: let one attempt through when the previous delay has passed, doubling the next delay."""
    row = AttemptCounter.objects.select_for_update().get(key=key, window_start=start)
    if row.not_before is not None and now < row.not_before:
        raise RateLimited(message, code=code, retry_after=math.ceil(min(row.not_before, window_end) - now))
    AttemptCounter.objects.filter(pk=row.pk).update(slowed=row.slowed + 1, not_before=now + _delay(row.slowed))


def attempt_admit(*, limits: list[Limit], message: str, code: str = "rate_limited") -> Admission:
    """Count one attempt in every limit, or refuse it (429) without counting it anywhere."""
    now = time.time()
    admission = Admission()
    with transaction.atomic():
        for lim in limits:
            if lim.limit <= 0:
                continue  # a limit of 0 turns that counter off
            key, start = _key(lim.key), int(now) // lim.window * lim.window
            end = start + lim.window
            if _count(key, start, lim.limit, end) is not None:
                admission.rows.append((lim, start, False))
            elif lim.slow:
                _slow_slot(key, start, end, now, message, code)
                admission.rows.append((lim, start, True))
            else:
                raise RateLimited(message, code=code, retry_after=math.ceil(end - now))
    return admission


def attempt_succeeded(*, admission: Admission) -> None:
    """The secret was right: wipe the windows marked `reset_on_success`, give the attempt back elsewhere."""
    with transaction.atomic():
        for lim, start, slowed in admission.rows:
            rows = AttemptCounter.objects.filter(key=_key(lim.key), window_start=start)
            if lim.reset_on_success:
                rows.delete()
            elif not slowed:  # a slowed attempt never took a place under the limit
                rows.filter(count__gt=0).update(count=F("count") - 1)


def attempt_counters_prune(*, now: float | None = None) -> int:
    """Delete the rows of windows that have ended."""
    deleted, _ = AttemptCounter.objects.filter(expires_at__lt=int(now if now is not None else time.time())).delete()
    return deleted
