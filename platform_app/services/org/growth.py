"""Growth tracking for staff: allow-listed client events (`track`), the weekly funnel by sign-up cohort, and the
weekly review computed by beat and kept as history (docs/org.md).

Weeks are ISO weeks in UTC, named by their Monday. The funnel's steps are the milestones of
services/org/growth_events.py: a cohort is the accounts created in a week (`date_joined`, whatever created them);
a user reaches a workspace milestone when a workspace they created reached it.

Revenue is what paid invoices brought in during the week (billing's `revenue_paid_between`)."""
import json
from datetime import UTC, date, datetime, time, timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.db.models import Count, Q
from django.utils import timezone

from config import ratelimit
from config.errors import ValidationFailed
from platform_app.models import Deployment, GrowthEvent, WeeklyReview
from platform_app.services.org.growth_events import MILESTONES, WORKSPACE_CREATED

User = get_user_model()
MAX_PROPERTIES, MAX_PROPERTIES_BYTES = 20, 2048


def week_of(moment) -> date:
    """The Monday (UTC) of the week holding `moment` (a datetime or a date)."""
    day = moment.astimezone(UTC).date() if isinstance(moment, datetime) else moment
    return day - timedelta(days=day.weekday())


def _bounds(week: date) -> tuple[datetime, datetime]:
    start = datetime.combine(week, time.min, tzinfo=UTC)
    return start, start + timedelta(days=7)


# Client events ----------------------------------------------------------------------------------

def _properties(value) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict) or len(value) > MAX_PROPERTIES:
        raise ValidationFailed(f"properties must be an object of at most {MAX_PROPERTIES} keys.",
                               details={"properties": [f"An object of at most {MAX_PROPERTIES} keys."]})
    for key, item in value.items():
        if len(key) > 64 or not (item is None or isinstance(item, bool | int | float)
                                 or (isinstance(item, str) and len(item) <= 200)):
            raise ValidationFailed("properties values must be short strings, numbers, booleans or null.",
                                   details={"properties": [f"{key[:64]}: not a short scalar."]})
    if len(json.dumps(value)) > MAX_PROPERTIES_BYTES:
        raise ValidationFailed(f"properties must be at most {MAX_PROPERTIES_BYTES} bytes.",
                               details={"properties": [f"At most {MAX_PROPERTIES_BYTES} bytes."]})
    return value


def growth_track(*, user, event: str, properties=None) -> GrowthEvent:
    """One client event from a signed-in user: only the names in GROWTH_CLIENT_EVENTS (400 otherwise)."""
    if event not in settings.GROWTH_CLIENT_EVENTS:
        raise ValidationFailed(f"Unknown event `{event[:64]}`; allowed: {', '.join(settings.GROWTH_CLIENT_EVENTS)}.",
                               details={"event": [f"One of {', '.join(settings.GROWTH_CLIENT_EVENTS)}."]})
    properties = _properties(properties)
    ratelimit.consume(f"growth:track:{user.pk}", settings.GROWTH_TRACK_PER_USER_PER_MINUTE, 60,
                      "Too many events; try again in a minute.")
    return GrowthEvent.objects.create(event=event, source=GrowthEvent.Source.CLIENT, user=user,
                                      properties=properties)


# Funnel -----------------------------------------------------------------------------------------

def growth_funnel(*, weeks: int, now=None) -> dict:
    """`{"weeks", "steps", "cohorts": [{"week", "counts"}]}`, oldest cohort first, the current week last:
    counts[i] is how many of the week's new accounts reached steps[i]."""
    current = week_of(now or timezone.now())
    first = current - timedelta(weeks=weeks - 1)
    start, _ = _bounds(first)
    users = dict(User.objects.filter(date_joined__gte=start).values_list("pk", "date_joined"))
    created = GrowthEvent.objects.filter(event=WORKSPACE_CREATED, user__date_joined__gte=start,
                                         workspace__isnull=False)
    creator = dict(created.values_list("workspace_id", "user_id"))
    reached: dict[str, set] = {}
    for event, workspace_id in (GrowthEvent.objects.filter(event__in=MILESTONES[2:],
                                                           workspace_id__in=created.values("workspace_id"))
                                .values_list("event", "workspace_id")):
        reached.setdefault(event, set()).add(creator.get(workspace_id))
    reached[WORKSPACE_CREATED] = set(creator.values())
    cohorts = {first + timedelta(weeks=i): [0] * len(MILESTONES) for i in range(weeks)}
    for user_id, joined in users.items():
        counts = cohorts.get(week_of(joined))
        if counts is None:
            continue
        counts[0] += 1
        for i, step in enumerate(MILESTONES[1:], start=1):
            counts[i] += user_id in reached.get(step, ())
    return {"weeks": weeks, "steps": list(MILESTONES),
            "cohorts": [{"week": week.isoformat(), "counts": counts} for week, counts in cohorts.items()]}


# Weekly review ----------------------------------------------------------------------------------

def _revenue(start, end) -> tuple[int, str]:
    from django.conf import settings as conf

    from platform_app.services.billing.selectors import revenue_paid_between

    return revenue_paid_between(start, end), f"paid invoices, minor units of {conf.BILLING_CURRENCY.upper()}"


def growth_review_compute(*, week: date) -> WeeklyReview:
    """Compute one week's numbers (to now, for the current week) and keep them."""
    start, end = _bounds(week)
    created = Deployment.objects.filter(created_at__gte=start, created_at__lt=end)
    ended = Deployment.objects.filter(finished_at__gte=start, finished_at__lt=end).aggregate(
        failed=Count("pk", filter=Q(status=Deployment.Status.ERROR)),
        ready=Count("pk", filter=Q(status=Deployment.Status.READY)))
    finished = ended["failed"] + ended["ready"]
    revenue, note = _revenue(start, end)
    values = {"active_workspaces": created.values("project__workspace_id").distinct().count(),
              "sign_ups": User.objects.filter(date_joined__gte=start, date_joined__lt=end).count(),
              "deployments": created.count(),
              "failure_rate": round(ended["failed"] / finished, 4) if finished else 0.0,
              "revenue": revenue, "revenue_note": note, "computed_at": timezone.now()}
    for attempt in range(2):
        try:
            with transaction.atomic():
                review, _ = WeeklyReview.objects.update_or_create(week=week, defaults=values)
                return review
        except IntegrityError:  # computed by another worker at the same moment: update theirs
            if attempt:
                raise
    raise AssertionError("unreachable")


def growth_review_current(*, now=None) -> WeeklyReview:
    return growth_review_compute(week=week_of(now or timezone.now()))


def growth_reviews_compute(*, now=None) -> int:
    """Beat: the current week (to now) and the previous one (final once its week is over)."""
    current = week_of(now or timezone.now())
    for week in (current - timedelta(weeks=1), current):
        growth_review_compute(week=week)
    return 2


def growth_reviews_history(*, n: int) -> list[WeeklyReview]:
    """The last `n` weeks kept, newest first."""
    return list(WeeklyReview.objects.order_by("-week")[:n])
