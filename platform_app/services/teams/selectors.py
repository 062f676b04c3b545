"""Reads the dashboard shows about a workspace: members, invitations, audit."""
from django.utils import timezone

from platform_app.models import AuditEvent, Invitation, Membership


def members_of(*, workspace):
    return Membership.objects.filter(workspace=workspace).select_related("user").order_by("created_at")


def invitations_of(*, workspace, status: str | None = None):
    qs = Invitation.objects.filter(workspace=workspace).select_related("workspace", "invited_by")
    return qs.filter(status=status) if status else qs


def invitations_pending(*, workspace) -> list[Invitation]:
    return list(Invitation.objects.filter(workspace=workspace, status=Invitation.Status.PENDING,
                                          expires_at__gt=timezone.now()).select_related("invited_by"))


def audit_events(*, workspace, action: str = "", limit: int | None = 100):
    """The workspace's audit log, newest first (`limit` None: all of it, for a paged answer)."""
    qs = AuditEvent.objects.filter(workspace=workspace).select_related("actor")
    if action:
        qs = qs.filter(action__startswith=action)
    qs = qs.order_by("-created_at")
    return qs[:limit] if limit else qs
