"""Reads the dashboard shows about a workspace: members, invitations, audit."""
from django.utils import timezone

from platform_app.models import AuditEvent, Invitation, Membership


def members_of(*, workspace) -> list[Membership]:
    return list(Membership.objects.filter(workspace=workspace).select_related("user").order_by("created_at"))


def invitations_pending(*, workspace) -> list[Invitation]:
    return list(Invitation.objects.filter(workspace=workspace, status=Invitation.Status.PENDING,
                                          expires_at__gt=timezone.now()).select_related("invited_by"))


def audit_events(*, workspace, action: str = "", limit: int = 100) -> list[AuditEvent]:
    qs = AuditEvent.objects.filter(workspace=workspace).select_related("actor")
    if action:
        qs = qs.filter(action__startswith=action)
    return list(qs.order_by("-created_at")[:limit])
