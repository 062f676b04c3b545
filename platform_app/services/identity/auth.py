"""Sign-up, sign-in, refresh rotation, sign-out and sessions.

Shared by the platform API (`/v1/auth/...`) and the warehouse cookies
(`/api/auth/...`): a session of kind `warehouse` issues the same RS256 access
tokens with the warehouse audience.
"""
import secrets
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.core.cache import cache
from django.core.mail import send_mail
from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from config.errors import Conflict, Unauthenticated, ValidationFailed
from platform_app.models import AuthSession, RefreshToken
from platform_app.services.identity.email_verification import email_verification_mail
from platform_app.services.identity.keys import sha256_hex, token_issue
from platform_app.services.identity.throttle import Admission, Limit, address_key, attempt_admit, attempt_succeeded
from platform_app.services.org.growth_events import SIGNED_UP, growth_event_record

User = get_user_model()

SESSION_PLATFORM = "platform"
# Session kind → JWT audience. The platform knows its own; a product whose sign-in is a platform session of
# another kind (the warehouse's cookies) registers it from its AppConfig.ready().
AUDIENCES = {SESSION_PLATFORM: "platform"}


def session_kind_register(kind: str, *, audience: str) -> None:
    AUDIENCES[kind] = audience


@dataclass
class IssuedTokens:
    user: "User"
    session: AuthSession
    access_token: str
    refresh_token: str
    expires_in: int


def password_check_strength(password: str, user=None) -> None:
    try:
        validate_password(password, user)
    except DjangoValidationError as exc:
        raise ValidationFailed(" ".join(exc.messages), code="weak_password", details={"password": exc.messages})


@transaction.atomic
def user_sign_up(*, email: str, password: str, name: str = "") -> "User":
    email = User.objects.normalize_email(email).lower()
    candidate = User(email=email, name=name)
    password_check_strength(password, candidate)
    if User.objects.filter(email__iexact=email).exists():
        raise Conflict("An account with this email already exists.", code="email_taken")
    try:
        with transaction.atomic():
            user = User.objects.create_user(email=email, password=password, name=name)
    except IntegrityError:  # a concurrent sign-up with the same email
        raise Conflict("An account with this email already exists.", code="email_taken")
    email_verification_mail(user)  # the account works at once; invitations to the address wait for the link
    growth_event_record(event=SIGNED_UP, user=user, properties={"via": "password"})
    return user


def user_sign_up_undisclosed(*, email: str, password: str, name: str = "") -> "User | None":
    """A sign-up whose answer does not tell whether the address has an account (the warehouse's, which signs
    nobody in): for a known address the password is hashed all the same (the time a new account takes), the
    account's owner is mailed instead, and None tells the caller to answer as for a new account."""
    try:
        return user_sign_up(email=email, password=password, name=name)
    except Conflict as exc:
        if exc.code != "email_taken":
            raise
    make_password(password)
    owner = User.objects.filter(email__iexact=User.objects.normalize_email(email)).first()
    if owner is not None:
        sign_up_attempt_mail(owner)
    return None


def sign_up_attempt_mail(owner) -> None:
    """Tell an account's owner someone tried to sign up with the address: at most once an hour per account, so
    the form is no way to flood a mailbox (without a cache, every attempt mails)."""
    try:
        if not cache.add(f"sign-up-attempt-mail:{owner.pk}", 1, timeout=3600):
            return
    except Exception:  # noqa: BLE001 - the owner hearing twice is the lesser harm
        pass
    body = (f"Someone tried to sign up with your address ({owner.email}).\n\n"
            f"If it was you: you already have an account. Sign in at {settings.SITE_URL}, or reset your "
            f"password if you forgot it.\nIf it was not you, nothing changed and you can ignore this message.\n")
    transaction.on_commit(lambda: send_mail("Someone tried to sign up with your address", body, None,
                                            [owner.email]))


# Brute force -----------------------------------------------------------------

SIGN_IN_REFUSED = "Too many failed sign-in attempts; try again later."


def sign_in_limits(*, email: str, ip: str) -> list[Limit]:
    """Per (account, address) a hard limit, per account a slowing ceiling, per address a hard ceiling."""
    email, addr, window = (email or "").strip().lower(), address_key(ip), settings.AUTH_FAILURE_WINDOW_SECONDS
    return [
        Limit(f"signin:pair:{email}|{addr}", settings.AUTH_FAILURES_PER_ACCOUNT_AND_IP, window, reset_on_success=True),
        Limit(f"signin:acct:{email}", settings.AUTH_FAILURES_PER_ACCOUNT, window, slow=True),
        Limit(f"signin:ip:{addr}", settings.AUTH_FAILURES_PER_IP, window),
    ]


def sign_in_guard(*, email: str, ip: str) -> Admission:
    """Count this attempt before the password is checked; 429 (nothing counted) when a limit refuses it."""
    return attempt_admit(limits=sign_in_limits(email=email, ip=ip), message=SIGN_IN_REFUSED)


def user_authenticate(*, email: str, password: str, ip: str) -> "User":
    """Check credentials with brute-force limits; the same error for unknown email and wrong password."""
    admission = sign_in_guard(email=email, ip=ip)
    user = User.objects.filter(email__iexact=(email or "").strip()).first()
    if user is None:
        User().set_password(password)  # same work either way: no timing oracle for emails
    if user is None or not user.check_password(password) or not user.is_active:
        raise Unauthenticated("Email or password is incorrect.", code="invalid_credentials")
    attempt_succeeded(admission=admission)
    return user


# Sessions and tokens -----------------------------------------------------------

def _new_refresh(session: AuthSession) -> str:
    raw = "rt_" + secrets.token_urlsafe(32)
    RefreshToken.objects.create(
        session=session, token_hash=sha256_hex(raw),
        expires_at=timezone.now() + timedelta(days=settings.REFRESH_TOKEN_TTL_DAYS),
    )
    return raw


def access_token_issue(session: AuthSession) -> tuple[str, int]:
    return token_issue(subject=str(session.user_id), audience=AUDIENCES[session.kind],
                       ttl_seconds=settings.JWT_ACCESS_TTL_SECONDS, sid=session.id, email=session.user.email)


@transaction.atomic
def session_start(*, user, kind: str = SESSION_PLATFORM, ip: str = "", user_agent: str = "") -> IssuedTokens:
    session = AuthSession.objects.create(user=user, kind=kind, ip=ip[:64], user_agent=user_agent[:300])
    User.objects.filter(pk=user.pk).update(last_login=timezone.now())
    access, ttl = access_token_issue(session)
    return IssuedTokens(user, session, access, _new_refresh(session), ttl)


def session_refresh(*, refresh_token: str, kind: str = SESSION_PLATFORM) -> IssuedTokens:
    """Rotate: the presented token is spent and a new pair issued. Presenting a
    spent token again means it leaked: the whole session is revoked."""
    result = _session_refresh_locked(refresh_token=refresh_token, kind=kind)
    if isinstance(result, Unauthenticated):
        raise result  # raised after commit, so a reuse revocation is kept
    return result


@transaction.atomic
def _session_refresh_locked(*, refresh_token: str, kind: str):
    row = (RefreshToken.objects.select_for_update().select_related("session__user")
           .filter(token_hash=sha256_hex(refresh_token or ""), session__kind=kind).first())
    if row is None:
        return Unauthenticated("The refresh token is not valid.", code="invalid_token")
    session = row.session
    now = timezone.now()
    if session.revoked_at is not None:
        return Unauthenticated("The session has been revoked.", code="token_revoked")
    if row.used_at is not None:
        session_revoke(session=session, reason="refresh_reuse")
        return Unauthenticated("The refresh token was already used; the session has been revoked.",
                               code="token_revoked")
    if row.expires_at <= now:
        return Unauthenticated("The refresh token has expired.", code="token_expired")
    if not session.user.is_active:
        return Unauthenticated("The account is disabled.", code="token_revoked")
    row.used_at = now
    row.save(update_fields=["used_at"])
    AuthSession.objects.filter(pk=session.pk).update(last_used_at=now)
    access, ttl = access_token_issue(session)
    return IssuedTokens(session.user, session, access, _new_refresh(session), ttl)


def session_revoke(*, session: AuthSession, reason: str = "revoked") -> AuthSession:
    if session.revoked_at is None:
        session.revoked_at = timezone.now()
        session.revoked_reason = reason
        session.save(update_fields=["revoked_at", "revoked_reason"])
    return session


@transaction.atomic
def sessions_revoke_all(*, user, kind: str | None = None, keep: AuthSession | None = None, reason: str = "revoked") -> int:
    qs = AuthSession.objects.filter(user=user, revoked_at__isnull=True)
    if kind:
        qs = qs.filter(kind=kind)
    if keep is not None:
        qs = qs.exclude(pk=keep.pk)
    return qs.update(revoked_at=timezone.now(), revoked_reason=reason)


def session_for_refresh_token(refresh_token: str) -> AuthSession | None:
    row = RefreshToken.objects.select_related("session").filter(token_hash=sha256_hex(refresh_token or "")).first()
    return row.session if row else None


def session_active(session_id: str) -> AuthSession:
    """The session behind an access token; 401 when it is gone or revoked."""
    session = AuthSession.objects.select_related("user").filter(pk=session_id).first()
    if session is None:
        raise Unauthenticated("The session does not exist.", code="invalid_token")
    if session.revoked_at is not None:
        raise Unauthenticated("The session has been revoked.", code="token_revoked")
    if not session.user.is_active:
        raise Unauthenticated("The account is disabled.", code="token_revoked")
    return session


def password_change(*, user, current_password: str, new_password: str, keep_session: AuthSession | None,
                    ip: str = "") -> None:
    """Change a password (current one required, counted like a sign-in) and sign out every other session."""
    admission = sign_in_guard(email=user.email, ip=ip)  # committed on its own: a refusal below keeps the count
    if not user.check_password(current_password or ""):
        raise ValidationFailed("The current password is incorrect.", code="invalid_current_password",
                               details={"currentPassword": ["Incorrect."]})
    attempt_succeeded(admission=admission)
    password_check_strength(new_password, user)
    _password_set(user=user, new_password=new_password, keep_session=keep_session)


@transaction.atomic
def _password_set(*, user, new_password: str, keep_session: AuthSession | None) -> None:
    user.set_password(new_password)
    user.save(update_fields=["password"])
    sessions_revoke_all(user=user, keep=keep_session, reason="password_changed")
