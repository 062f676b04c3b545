"""The meters usage is recorded in, the cost categories they add up to, and the calendar-month billing period.
Imports no other service: metering, cost, caps and invoices all read it."""
from datetime import UTC, datetime, timedelta

from django.conf import settings

BUILD_SECONDS = "build_seconds"
EDGE_REQUESTS = "edge_requests"
EDGE_BYTES = "edge_bytes"
INSTANCE_PREFIX = "instance_seconds:"  # + the instance size key (INSTANCE_SIZES, or INSTANCE_DEFAULT_SIZE_KEY)
STORAGE_ARTIFACTS = "storage_artifacts"  # byte-hours of deployment archives
STORAGE_VOLUMES = "storage_volumes"  # byte-hours of volumes (their size)

CATEGORIES = ("builds", "requests", "bandwidth", "instances", "storage")
# category → (invoice line description, display unit, base units per display unit)
CATEGORY_UNITS = {
    "builds": ("Build minutes", "minutes", 60),
    "requests": ("Edge requests", "requests", 1),
    "bandwidth": ("Bandwidth", "GB", 10 ** 9),
    "instances": ("Instance hours", "hours", 3600),
    "storage": ("Storage", "GB-months", 10 ** 9 * 730),
}


def category_of(meter: str) -> str:
    if meter == BUILD_SECONDS:
        return "builds"
    if meter == EDGE_REQUESTS:
        return "requests"
    if meter == EDGE_BYTES:
        return "bandwidth"
    if meter.startswith(INSTANCE_PREFIX):
        return "instances"
    return "storage"


def instance_meter(size_key: str) -> str:
    return f"{INSTANCE_PREFIX}{size_key}"


def instance_size(size_key: str) -> dict | None:
    """An instance size by key: INSTANCE_SIZES, or the INSTANCE_* default (INSTANCE_DEFAULT_SIZE_KEY)."""
    if size_key == settings.INSTANCE_DEFAULT_SIZE_KEY:
        return settings.INSTANCE_DEFAULT_SIZE
    return settings.INSTANCE_SIZES.get(size_key)


def hour_floor(moment: datetime) -> datetime:
    return moment.astimezone(UTC).replace(minute=0, second=0, microsecond=0)


def period_bounds(moment: datetime) -> tuple[datetime, datetime]:
    """The calendar month (UTC) holding `moment`: [start, end)."""
    moment = moment.astimezone(UTC)
    start = moment.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    end = (start + timedelta(days=32)).replace(day=1)
    return start, end


def previous_period(start: datetime) -> tuple[datetime, datetime]:
    return period_bounds(start - timedelta(seconds=1))


ZERO_DECIMAL = {"bif", "clp", "djf", "gnf", "jpy", "kmf", "krw", "mga", "pyg", "rwf", "ugx", "vnd", "vuv", "xaf",
                "xof", "xpf"}


def money(amount: int, currency: str) -> str:
    """`1234, "usd"` → "12.34 USD" (minor units shown in the currency's major unit)."""
    if currency.lower() in ZERO_DECIMAL:
        return f"{amount} {currency.upper()}"
    sign = "-" if amount < 0 else ""
    return f"{sign}{abs(amount) // 100}.{abs(amount) % 100:02d} {currency.upper()}"
