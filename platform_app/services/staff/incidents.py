"""Incidents: staff open one with its first update, add updates as it moves on, and resolve it with an update
whose status is `resolved`. The status page shows them with their updates, oldest first."""
from django.conf import settings
from django.db import transaction
from django.db.models import Prefetch
from django.utils import timezone

from config.errors import NotFound, ValidationFailed
from platform_app.models import Incident, IncidentUpdate

IMPACTS = tuple(Incident.Impact.values)
STATUSES = tuple(Incident.Status.values)


def _check_status(status: str) -> None:
    if status not in STATUSES:
        raise ValidationFailed(f"status must be one of {', '.join(STATUSES)}.",
                               details={"status": [f"One of {', '.join(STATUSES)}."]})


def _check_message(message: str) -> str:
    message = (message or "").strip()
    if not message:
        raise ValidationFailed("message is required.", details={"message": ["Required."]})
    return message


def incident_get(*, incident_id: str) -> Incident:
    incident = Incident.objects.filter(pk=incident_id).first()
    if incident is None:
        raise NotFound("No such incident.")
    return incident


@transaction.atomic
def incident_create(*, title: str, impact: str, status: str, message: str, components: list[str], actor=None) -> Incident:
    """A new incident and its first update (the status and message given)."""
    title = (title or "").strip()
    if not title:
        raise ValidationFailed("title is required.", details={"title": ["Required."]})
    if impact not in IMPACTS:
        raise ValidationFailed(f"impact must be one of {', '.join(IMPACTS)}.",
                               details={"impact": [f"One of {', '.join(IMPACTS)}."]})
    _check_status(status)
    message = _check_message(message)
    unknown = sorted(set(components) - set(settings.STATUS_COMPONENTS))
    if unknown:
        raise ValidationFailed(f"Unknown components: {', '.join(unknown)}.",
                               details={"components": [f"Some of {', '.join(settings.STATUS_COMPONENTS)}."]})
    now = timezone.now()
    incident = Incident.objects.create(title=title, impact=impact, status=status,
                                       components=list(dict.fromkeys(components)), started_at=now,
                                       resolved_at=now if status == Incident.Status.RESOLVED else None,
                                       created_by=actor)
    IncidentUpdate.objects.create(incident=incident, status=status, message=message, created_by=actor, created_at=now)
    return incident


@transaction.atomic
def incident_update_add(*, incident_id: str, status: str, message: str, actor=None) -> IncidentUpdate:
    """An update: the incident takes its status (`resolved` resolves it; any other reopens a resolved one)."""
    incident = Incident.objects.select_for_update().filter(pk=incident_id).first()
    if incident is None:
        raise NotFound("No such incident.")
    _check_status(status)
    message = _check_message(message)
    now = timezone.now()
    update = IncidentUpdate.objects.create(incident=incident, status=status, message=message, created_by=actor,
                                           created_at=now)
    incident.status = status
    incident.resolved_at = (incident.resolved_at or now) if status == Incident.Status.RESOLVED else None
    incident.save(update_fields=["status", "resolved_at"])
    return update


def incident_with_updates(*, incident_id: str) -> Incident:
    """An incident with its updates in order (what the API answers after a write)."""
    incident = (Incident.objects.filter(pk=incident_id)
                .prefetch_related(Prefetch("updates", IncidentUpdate.objects.order_by("created_at", "id"))).first())
    if incident is None:
        raise NotFound("No such incident.")
    return incident


def incidents_list(*, limit: int = 50):
    """The newest incidents (staff pages), with their updates in order."""
    return (Incident.objects.prefetch_related(Prefetch("updates", IncidentUpdate.objects.order_by("created_at", "id")))
            .order_by("-started_at")[:limit])
