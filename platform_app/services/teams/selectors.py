"""Reads the dashboard shows about a workspace: members, invitations, tokens, audit, sessions."""
from django.utils import timezone

from platform_app.models import ApiToken, AuditEvent, AuthSession, Invitation, Membership


def members_of(*, workspace) -> list[Membership]:
    return list(Membership.objects.filter(workspace=workspace).select_related("user").order_by("created_at"))


def invitations_pending(*, workspace) -> list[Invitation]:
    return list(Invitation.objects.filter(workspace=workspace, status=Invitation.Status.PENDING,
                                          expires_at__gt=timezone.now()).select_related("invited_by"))


def tokens_of(*, user, workspace) -> list[ApiToken]:
    return list(ApiToken.objects.filter(user=user, workspace=workspace, revoked_at__isnull=True)
                .order_by("-created_at"))


def audit_events(*, workspace, action: str = "", limit: int = 100) -> list[AuditEvent]:
    qs = AuditEvent.objects.filter(workspace=workspace).select_related("actor")
    if action:
        qs = qs.filter(action__startswith=action)
    return list(qs.order_by("-created_at")[:limit])


def sessions_of(*, user) -> list[AuthSession]:
    return list(AuthSession.objects.filter(user=user, revoked_at__isnull=True).order_by("-last_used_at"))


def session_of(*, user, session_id: str) -> AuthSession | None:
    return AuthSession.objects.filter(user=user, pk=session_id, revoked_at__isnull=True).first()
