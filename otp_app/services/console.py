"""What the code console reads and the two actions it adds on top of the API's services: a test send
with one of the workspace's test keys, and verifying a sandbox code. Pages call these; they hold no query."""
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta

from django.conf import settings
from django.db.models import Count, Prefetch
from django.db.models.functions import TruncDate
from django.utils import timezone

from otp_app import channels
from otp_app.models import CHANNELS, ApiKey, Delivery, OtpRecord, RoutingRule, SandboxMessage, WorkspacePolicy
from otp_app.services.errors import NotFound, ValidationFailed
from otp_app.services.records import SendResult, otp_send, otp_verify

USAGE_DAYS = 14


def console_keys(*, workspace):
    """The workspace's active keys, newest first."""
    return ApiKey.objects.filter(workspace=workspace, revoked_at__isnull=True)


def console_key_get(*, workspace, key_id: str) -> ApiKey:
    key = ApiKey.objects.filter(pk=key_id, workspace=workspace).first()
    if key is None:
        raise NotFound("No such key in this workspace.")
    return key


def console_test_key(*, workspace) -> ApiKey | None:
    """The newest active test key: the one the console's test sends use."""
    return console_keys(workspace=workspace).filter(mode=ApiKey.Mode.TEST).first()


def console_live_key(*, workspace) -> ApiKey:
    """A live key for the balance report (an unsaved one when the workspace has none yet)."""
    return console_keys(workspace=workspace).filter(mode=ApiKey.Mode.LIVE).first() or ApiKey(
        workspace=workspace, mode=ApiKey.Mode.LIVE)


def console_outbox(*, workspace, limit: int = 50):
    return SandboxMessage.objects.filter(api_key__workspace=workspace).select_related("record")[:limit]


def sandbox_messages_of(*, api_key, limit: int = 100):
    """A test key's own outbox, newest first (the API's sandbox route)."""
    return SandboxMessage.objects.filter(api_key=api_key)[:limit]


@dataclass
class DailyUsage:
    days: list  # [date, ...] oldest first
    channels: list  # channels with at least one delivery in the window
    counts: dict  # {(date, channel): deliveries}
    total: int


def usage_by_day(*, workspace, days: int = USAGE_DAYS, today: date | None = None) -> DailyUsage:
    """Delivery attempts per channel per day over the last `days` days (test and live keys alike)."""
    today = today or timezone.localdate()
    first = today - timedelta(days=days - 1)
    since = timezone.make_aware(datetime.combine(first, time.min))
    rows = (Delivery.objects.filter(record__workspace=workspace, created_at__gte=since)
            .annotate(day=TruncDate("created_at")).values("day", "channel").annotate(n=Count("id")).order_by())
    counts = {(r["day"], r["channel"]): r["n"] for r in rows}
    used = {channel for _, channel in counts}
    return DailyUsage(days=[first + timedelta(days=i) for i in range(days)],
                      channels=[c for c in CHANNELS if c in used] + sorted(used - set(CHANNELS)),
                      counts=counts, total=sum(counts.values()))


def records_log(*, workspace, status: str = "", channel: str = "", day_from: date | None = None,
                day_to: date | None = None):
    """The workspace's code records, newest first, each with its delivery attempts."""
    qs = OtpRecord.objects.filter(workspace=workspace)
    if status:
        qs = qs.filter(status=status)
    if channel:
        qs = qs.filter(deliveries__channel=channel).distinct()
    if day_from:
        qs = qs.filter(created_at__gte=timezone.make_aware(datetime.combine(day_from, time.min)))
    if day_to:
        qs = qs.filter(created_at__lt=timezone.make_aware(datetime.combine(day_to + timedelta(days=1), time.min)))
    return qs.select_related("api_key").prefetch_related(
        Prefetch("deliveries", queryset=Delivery.objects.order_by("created_at", "pk"))).order_by("-created_at", "-pk")


def routing_overview(*, workspace) -> dict:
    """What decides a send's channels: the workspace's rules, the defaults, which channels are configured
    (live keys only use those; test keys use every channel), and the countries the workspace may send to."""
    policy = WorkspacePolicy.objects.filter(workspace=workspace).first()
    return {
        "rules": list(RoutingRule.objects.filter(workspace=workspace).order_by("country")),
        "defaults": sorted(settings.OTP_DEFAULT_ROUTES.items()),
        "channels": [{"name": c, "configured": channels.configured(c), "price": settings.OTP_PRICES.get(c, 0)}
                     for c in CHANNELS],
        "currency": settings.OTP_CURRENCY,
        "allowed_countries": policy.allowed_countries if policy else [],
    }


def console_test_send(*, workspace, recipient: str, channel: str | None, locale: str = "en") -> SendResult:
    """A send through the API's own service with the workspace's test key: the code lands in the outbox."""
    key = console_test_key(workspace=workspace)
    if key is None:
        raise ValidationFailed("Create a test key first: test sends use one.", code="no_test_key")
    return otp_send(api_key=key, recipient=recipient, locale=locale, channel=channel or None)


def console_test_verify(*, workspace, record_id: str, code: str) -> OtpRecord:
    """Verify a sandbox code with the key that sent it; live codes are verified by the customer's app only."""
    record = OtpRecord.objects.select_related("api_key").filter(pk=record_id, workspace=workspace).first()
    if record is None:
        raise NotFound("No such code record.")
    if record.mode != ApiKey.Mode.TEST:
        raise ValidationFailed("Only test codes can be verified here.", code="sandbox_only")
    if not (len(code) == 6 and code.isascii() and code.isdigit()):
        raise ValidationFailed("code must be the 6 digits that were sent.", code="invalid_code")
    return otp_verify(api_key=record.api_key, record_id=record.pk, code=code)
