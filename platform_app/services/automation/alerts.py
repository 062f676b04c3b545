"""Alert rules: a metric of a project (alert_metrics.py) against a threshold over a window, evaluated by beat
each minute. At most one open Alert per rule (a partial unique constraint): it fires once, notifies its
channels once, and resolves once the metric is back under the threshold, with a resolved notice. A trusted
caller may fire a rule (`/v1/internal/alerts/{ruleId}/fire`); such an alert resolves at the first evaluation
under the threshold after its window has passed."""
import json
import logging
from datetime import timedelta

from django.conf import settings
from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.mail import send_mail
from django.core.validators import validate_email
from django.db import IntegrityError, transaction
from django.db.models import Prefetch
from django.utils import timezone

from config.errors import Conflict, NotFound, ValidationFailed
from config.jobs import enqueue
from config.outbound import OutboundRefused, outbound_check, outbound_request
from platform_app.models import Alert, AlertRule, Membership
from platform_app.services.automation.alert_metrics import COUNT_METRICS, UNITS, measure
from platform_app.services.automation.signing import SIGNATURE_HEADER, secret_new, secret_of, signature

logger = logging.getLogger(__name__)

NOTIFY_TASK = "platform_app.tasks.automation.alert_notify"
MAX_EMAILS = 20
# (lowest, highest) threshold per metric; a count fires from 1.
THRESHOLDS = {"deployment_failed": (1, 1000), "cron_failed": (1, 1000), "instance_down": (1, 1),
              "domain_misconfigured": (1, 1000), "build_duration": (1, 86400), "edge_5xx_rate": (0.01, 100),
              "edge_p95_latency": (1, 600_000), "usage_cap": (1, 1000)}
ROLES = ("owner", "admin", "developer", "viewer", "billing")


# Rules --------------------------------------------------------------------------------------------

def threshold_default(metric: str, threshold: float | None) -> float:
    """The threshold as given; a count metric without one fires from 1 (what nearly everyone means), any other
    metric needs one (400 naming `threshold`)."""
    if threshold is not None:
        return threshold
    if metric in COUNT_METRICS:
        return 1
    raise ValidationFailed(f"threshold is required for {metric} ({UNITS.get(metric, 'its unit')}).",
                           details={"threshold": ["Required for this metric."]})


def _threshold_check(metric: str, threshold: float) -> None:
    if metric not in THRESHOLDS:
        raise ValidationFailed(f"Unknown metric {metric!r}.", code="unknown_metric",
                               details={"metric": [f"One of {', '.join(THRESHOLDS)}."]})
    low, high = THRESHOLDS[metric]
    if not low <= threshold <= high:
        raise ValidationFailed(f"threshold for {metric} must be between {low} and {high} ({UNITS[metric]}).",
                               details={"threshold": [f"Between {low} and {high}."]})
    if metric in COUNT_METRICS and threshold != int(threshold):
        raise ValidationFailed(f"threshold for {metric} is a count.", details={"threshold": ["A whole number."]})


def channels_check(channels: list[dict]) -> list[dict]:
    """Email addresses, webhook URLs through the outbound guard, or the workspace's members (optionally some
    roles). Returns the channels as stored."""
    if not channels or len(channels) > 10:
        raise ValidationFailed("channels must list 1 to 10 channels.", details={"channels": ["1 to 10."]})
    clean = []
    for i, channel in enumerate(channels):
        kind = channel.get("type") if isinstance(channel, dict) else None
        extra = set(channel) - {"type", "to", "url", "roles"} if isinstance(channel, dict) else set()
        if extra:
            raise ValidationFailed(f"channels[{i}] has unknown fields.", details={"channels": [f"Item {i}: unknown "
                                                                                               f"{sorted(extra)}."]})
        if kind == "email":
            to = channel.get("to")
            if not isinstance(to, list) or not 1 <= len(to) <= MAX_EMAILS:
                raise ValidationFailed("An email channel needs `to`: 1 to 20 addresses.",
                                       details={"channels": [f"Item {i}: `to` must list addresses."]})
            for address in to:
                try:
                    validate_email(address if isinstance(address, str) else "")
                except DjangoValidationError:
                    raise ValidationFailed(f"{address!r} is not an email address.",
                                           details={"channels": [f"Item {i}: invalid address."]})
            clean.append({"type": "email", "to": list(dict.fromkeys(to))})
        elif kind == "webhook":
            url = channel.get("url")
            if not isinstance(url, str):
                raise ValidationFailed("A webhook channel needs `url`.", details={"channels": [f"Item {i}: url."]})
            outbound_check(url, purpose="alert webhook")
            clean.append({"type": "webhook", "url": url.strip()})
        elif kind == "members":
            roles = channel.get("roles") or []
            if not isinstance(roles, list) or any(not isinstance(r, str) or r not in ROLES for r in roles):
                raise ValidationFailed(f"roles must be some of {', '.join(ROLES)}.",
                                       details={"channels": [f"Item {i}: unknown role."]})
            clean.append({"type": "members", "roles": roles})
        else:
            raise ValidationFailed("A channel's type is email, webhook or members.",
                                   details={"channels": [f"Item {i}: unknown type."]})
    return clean


def _open_alerts() -> Prefetch:
    """Each rule's open alert, loaded with the rules (read by `open_alert`)."""
    return Prefetch("alerts", queryset=Alert.objects.filter(resolved_at__isnull=True), to_attr="open_alerts")


def alert_rules_list(*, project, recent: int = 0):
    """The project's rules, each with its open alert loaded (`open_alert` reads it without a query); with
    `recent`, also its newest alerts in `recent_alerts`."""
    rules = AlertRule.objects.filter(project=project).prefetch_related(_open_alerts())
    if recent:
        rules = rules.prefetch_related(Prefetch("alerts", Alert.objects.all()[:recent], to_attr="recent_alerts"))
    return rules


@transaction.atomic
def alert_rule_create(*, project, name: str, metric: str, threshold: float | None, window_minutes: int,
                      channels: list[dict]) -> tuple[AlertRule, str]:
    """A new rule and the secret its webhooks are signed with (shown once). A count metric's threshold defaults
    to 1."""
    if metric in THRESHOLDS:
        threshold = threshold_default(metric, threshold)
    _threshold_check(metric, threshold)
    if not 1 <= window_minutes <= settings.ALERT_MAX_WINDOW_MINUTES:
        raise ValidationFailed(f"windowMinutes must be between 1 and {settings.ALERT_MAX_WINDOW_MINUTES}.",
                               details={"windowMinutes": ["Out of range."]})
    channels = channels_check(channels)
    type(project).objects.select_for_update().filter(pk=project.pk).first()
    if AlertRule.objects.filter(project=project).count() >= settings.ALERT_RULES_MAX_PER_PROJECT:
        raise Conflict(f"A project has at most {settings.ALERT_RULES_MAX_PER_PROJECT} alert rules.",
                       code="limit_reached", details={"limit": settings.ALERT_RULES_MAX_PER_PROJECT})
    plain, encrypted = secret_new()
    rule = AlertRule.objects.create(project=project, name=name, metric=metric, threshold=threshold,
                                    window_minutes=window_minutes, channels=channels, secret_encrypted=encrypted)
    return rule, plain


@transaction.atomic
def alert_rule_delete(*, project, rule_id: str) -> None:
    deleted, _ = AlertRule.objects.filter(project=project, pk=rule_id).delete()
    if not deleted:
        raise NotFound("No such alert rule.")


def open_alert(rule: AlertRule) -> Alert | None:
    if hasattr(rule, "open_alerts"):  # loaded by alert_rules_list
        return rule.open_alerts[0] if rule.open_alerts else None
    return rule.alerts.filter(resolved_at__isnull=True).first()


# Firing and resolving -----------------------------------------------------------------------------

def _open(rule: AlertRule, *, value, message: str, source: str, now) -> tuple[Alert, bool]:
    """The rule's open alert: a new one (True) or the one already open (False)."""
    try:
        with transaction.atomic():
            alert = Alert.objects.create(rule=rule, value=value, message=message, source=source, fired_at=now)
    except IntegrityError:
        return rule.alerts.get(resolved_at__isnull=True), False  # another evaluation opened it just now
    AlertRule.objects.filter(pk=rule.pk).update(state=AlertRule.State.FIRING)
    enqueue(NOTIFY_TASK, alert.pk, "fired")
    return alert, True


def alert_fire(*, rule_id: str, message: str = "", value: float | None = None) -> tuple[Alert, bool]:
    """The internal route: open an alert for the rule now (or return the open one)."""
    rule = AlertRule.objects.select_related("project").filter(pk=rule_id).first()
    if rule is None:
        raise NotFound("No such alert rule.")
    return _open(rule, value=value, message=message or "Fired by an internal caller.", source="fire",
                 now=timezone.now())


def alert_rule_evaluate(*, rule: AlertRule, now=None) -> str:
    """Measure the rule's metric once and fire or resolve accordingly; returns the rule's state."""
    now = now or timezone.now()
    value, note = measure(rule.metric, rule.project, rule.window_minutes, now)
    firing = value is not None and value >= rule.threshold
    AlertRule.objects.filter(pk=rule.pk).update(last_value=value, last_evaluated_at=now)
    current = open_alert(rule)
    if firing:
        if current is None:
            _open(rule, value=value, source="evaluation", now=now,
                  message=f"{rule.metric} is {value:g} {UNITS[rule.metric]} over the last {rule.window_minutes} "
                          f"min (threshold {rule.threshold:g}).")
        return AlertRule.State.FIRING
    if current is not None:
        if current.source != "evaluation" and now - current.fired_at < timedelta(minutes=rule.window_minutes):
            return AlertRule.State.FIRING  # a fired alert stays open at least one window
        resolved = Alert.objects.filter(pk=current.pk, resolved_at__isnull=True).update(resolved_at=now)
        AlertRule.objects.filter(pk=rule.pk).update(state=AlertRule.State.OK)
        if resolved:
            enqueue(NOTIFY_TASK, current.pk, "resolved")
    return AlertRule.State.OK


def alerts_evaluate(*, now=None) -> int:
    """Beat: evaluate every rule; returns how many are firing."""
    firing = 0
    rules = AlertRule.objects.select_related("project__production_deployment").prefetch_related(_open_alerts())
    for rule in rules:
        try:
            firing += alert_rule_evaluate(rule=rule, now=now) == AlertRule.State.FIRING
        except Exception:  # noqa: BLE001 - one broken rule must not stop the others
            logger.exception("alert rule %s could not be evaluated", rule.pk)
    return firing


# Notifications ------------------------------------------------------------------------------------

def _payload(alert: Alert, kind: str) -> dict:
    rule = alert.rule
    return {"type": f"alert.{kind}", "alertId": alert.pk, "ruleId": rule.pk, "rule": rule.name,
            "projectId": rule.project_id, "metric": rule.metric, "threshold": rule.threshold,
            "windowMinutes": rule.window_minutes, "value": alert.value, "message": alert.message,
            "firedAt": alert.fired_at.isoformat(),
            "resolvedAt": alert.resolved_at.isoformat() if alert.resolved_at else None}


def _recipients(rule: AlertRule, channel: dict) -> list[str]:
    if channel["type"] == "email":
        return channel["to"]
    members = Membership.objects.filter(workspace_id=rule.project.workspace_id).select_related("user")
    if channel.get("roles"):
        members = members.filter(role__in=channel["roles"])
    return [m.user.email for m in members if m.user.email]


def alert_notify(*, alert_id: str, kind: str) -> list[dict]:
    """Send the `fired` or `resolved` notice of one alert to each channel of its rule, once: a second delivery of
    the same task finds the notice recorded and sends nothing."""
    with transaction.atomic():
        alert = Alert.objects.select_for_update().select_related("rule__project").filter(pk=alert_id).first()
        if alert is None or any(n.get("kind") == kind for n in alert.notifications):
            return []
        marker = {"kind": kind, "channel": "-", "target": "", "ok": True, "error": "", "at": timezone.now().isoformat()}
        Alert.objects.filter(pk=alert.pk).update(notifications=[*alert.notifications, marker])
    rule, payload, results = alert.rule, _payload(alert, kind), []
    subject = (f"[{rule.project.slug}] {'Alert' if kind == 'fired' else 'Resolved'}: {rule.name}")
    text = json.dumps(payload, indent=2)
    for channel in rule.channels:
        result = {"kind": kind, "channel": channel["type"], "target": "", "ok": True, "error": "",
                  "at": timezone.now().isoformat()}
        try:
            if channel["type"] == "webhook":
                result["target"] = channel["url"]
                body = json.dumps(payload, separators=(",", ":")).encode()
                answer = outbound_request("POST", channel["url"], purpose="alert webhook", content=body,
                                          headers={"Content-Type": "application/json",
                                                   SIGNATURE_HEADER: signature(secret_of(rule.secret_encrypted), body)},
                                          max_bytes=64 * 1024, timeout=settings.ALERT_WEBHOOK_TIMEOUT_SECONDS)
                if not 200 <= answer.status_code < 300:
                    result.update(ok=False, error=f"The endpoint answered {answer.status_code}.")
            else:
                to = _recipients(rule, channel)
                result["target"] = ", ".join(to)
                if to:
                    send_mail(subject, f"{payload['message']}\n\n{text}", None, to)
        except OutboundRefused as exc:
            result.update(ok=False, error=exc.message)
        except Exception as exc:  # noqa: BLE001 - SMTP down: recorded, the other channels still get theirs
            logger.warning("alert %s %s notice to %s failed: %s", alert.pk, kind, channel["type"], exc)
            result.update(ok=False, error=f"{type(exc).__name__}: delivery failed.")
        results.append(result)
    with transaction.atomic():
        alert = Alert.objects.select_for_update().get(pk=alert.pk)
        alert.notifications = [n for n in alert.notifications
                               if not (n.get("kind") == kind and n.get("channel") == "-" and results)] + results
        alert.save(update_fields=["notifications"])
    return results
