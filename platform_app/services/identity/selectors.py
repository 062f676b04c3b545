"""Reads of the identity area that the API and the pages share (querysets: a list pages them)."""
from django_otp.plugins.otp_totp.models import TOTPDevice

from platform_app.models import ApiToken, AuthSession, User


def api_tokens_active(*, user=None, workspace=None):
    """Tokens not revoked: a user's own (`user`), or those bound to a workspace (`workspace`)."""
    qs = ApiToken.objects.filter(revoked_at__isnull=True)
    if user is not None:
        qs = qs.filter(user=user)
    if workspace is not None:
        qs = qs.filter(workspace=workspace)
    return qs


def auth_sessions_of(*, user):
    return AuthSession.objects.filter(user=user)


def totp_factors_of(*, user):
    return TOTPDevice.objects.filter(user=user).order_by("pk")


def active_user(user_id):
    """An active user by id (the pending MFA step of the dashboard sign-in), or None."""
    return User.objects.filter(pk=user_id, is_active=True).first()


def auth_sessions_open(*, user):
    """The user's sessions not revoked, most recently used first (the account page)."""
    return auth_sessions_of(user=user).filter(revoked_at__isnull=True).order_by("-last_used_at")


def auth_session_open(*, user, session_id: str):
    return auth_sessions_open(user=user).filter(pk=session_id).first()
