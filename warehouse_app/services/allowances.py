"""Monthly allowances of searches and rate requests. Counters live in the database; they are
enforced only when a payment provider is configured (otherwise recorded, and reported so)."""
from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from config.errors import ApplicationError
from warehouse_app.models import UsageCounter
from warehouse_app.services.accounts import profile_of

KINDS = ("search", "rfq")


class AllowanceExhausted(ApplicationError):
    status, code = 429, "allowance_exhausted"


def enforced() -> bool:
    return bool(settings.PAYMENTS_API_KEY)


def period_now() -> str:
    return timezone.now().strftime("%Y-%m")


def allowance_of(user, kind: str) -> int:
    plans = settings.WAREHOUSE_PLANS
    return plans.get(profile_of(user).plan, plans["free"])[kind]


@transaction.atomic
def allowance_consume(*, user, kind: str) -> UsageCounter:
    """Count one use; when enforced and the allowance is used up, 429 with the counter."""
    period, allowance = period_now(), allowance_of(user, kind)
    counter, _ = UsageCounter.objects.get_or_create(user=user, period=period, kind=kind)
    qs = UsageCounter.objects.filter(pk=counter.pk)
    if enforced():
        # the condition in the UPDATE makes two concurrent uses unable to pass the limit together
        if not qs.filter(used__lt=allowance).update(used=F("used") + 1):
            counter.refresh_from_db()
            raise AllowanceExhausted(
                f"The monthly {kind} allowance of your plan is used up.",
                extra={"counter": {"used": counter.used, "allowance": allowance, "period": period}})
    else:
        qs.update(used=F("used") + 1)
    counter.refresh_from_db()
    return counter


def usage_report(*, user) -> dict:
    period = period_now()
    used = dict(UsageCounter.objects.filter(user=user, period=period).values_list("kind", "used"))
    return {"plan": profile_of(user).plan, "period": period, "enforced": enforced(),
            "counters": {k: {"used": used.get(k, 0), "allowance": allowance_of(user, k)} for k in KINDS}}
