"""Email verification: proof that an account's owner reads its address.

Signing up (platform API, dashboard, warehouse) still signs in at once, and mails a link. Until the address is
verified, the account neither lists nor answers invitations to it (services/teams/invitations.py): whoever
registers an address first has proved nothing, and a leaked invitation link must not let them in.

A link carries a signed token (django.core.signing with SECRET_KEY: the user id and the address, valid
EMAIL_VERIFICATION_TTL_HOURS); nothing is stored. A link for an address the account no longer has verifies nothing;
using a link twice is harmless. Identity providers that vouch for an address verify it at social sign-in
(services/identity/social.py).
"""
from urllib.parse import urlencode

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core import signing
from django.core.mail import send_mail
from django.db import transaction
from django.utils import timezone

from config import ratelimit
from config.errors import Conflict, Forbidden, ValidationFailed

User = get_user_model()
SALT = "platform_app.email_verification"


def email_is_verified(user) -> bool:
    return getattr(user, "email_verified_at", None) is not None


def email_verified_require(user) -> None:
    """403 `email_unverified` until the account's address is verified."""
    if not email_is_verified(user):
        raise Forbidden(f"Verify your email address ({user.email}) first: invitations to it are shown and accepted "
                        f"only once it is verified. Ask for a new link with POST /v1/auth/email/verification.",
                        code="email_unverified", details={"email": user.email})


def email_verification_link(user) -> str:
    token = signing.dumps({"u": user.pk, "e": user.email.lower()}, salt=SALT, compress=True)
    return f"{settings.SITE_URL.rstrip('/')}/verify-email/?{urlencode({'token': token})}"


def email_verification_mail(user) -> None:
    """Mail the link once the transaction commits (a rolled-back sign-up mails nothing)."""
    body = (f"Confirm that {user.email} is your address:\n\n{email_verification_link(user)}\n\n"
            f"The link works for {settings.EMAIL_VERIFICATION_TTL_HOURS} hours. Until then, invitations to this "
            f"address are not shown to your account. If you did not sign up, ignore this message.\n")
    transaction.on_commit(lambda: send_mail("Verify your email address", body, None, [user.email]))


def email_verification_send(*, user) -> None:
    """Mail a new link to the account's address: 409 when it is verified, 429 past
    EMAIL_VERIFICATION_SENDS_PER_HOUR links an hour."""
    if email_is_verified(user):
        raise Conflict("This email address is already verified.", code="email_already_verified")
    ratelimit.consume(f"email-verification:{user.pk}", settings.EMAIL_VERIFICATION_SENDS_PER_HOUR, 3600,
                      "Too many verification emails; try again later.")
    email_verification_mail(user)


def email_change(*, user, email: str) -> None:
    """The one way an account's address changes (SCIM, the admin): the new address is unverified until its owner
    opens the link mailed to it. Keeping the old verification would vouch for an address no one proved."""
    email = email.strip().lower()
    if email == (user.email or "").lower():
        return
    user.email, user.email_verified_at = email, None
    user.save(update_fields=["email", "email_verified_at"])
    email_verification_mail(user)


def email_mark_verified(*, user, at=None) -> None:
    if user.email_verified_at is None:
        user.email_verified_at = at or timezone.now()
        User.objects.filter(pk=user.pk, email_verified_at__isnull=True).update(email_verified_at=user.email_verified_at)


def email_verify(*, token: str) -> "User":
    """Verify the address a link names; 400 `invalid_verification_link` or `verification_link_expired`."""
    invalid = ValidationFailed("This verification link is not valid; ask for a new one.",
                               code="invalid_verification_link", details={"token": ["Invalid."]})
    try:
        data = signing.loads(token or "", salt=SALT, max_age=settings.EMAIL_VERIFICATION_TTL_HOURS * 3600)
    except signing.SignatureExpired:
        raise ValidationFailed("This verification link has expired; ask for a new one.",
                               code="verification_link_expired", details={"token": ["Expired."]})
    except signing.BadSignature:
        raise invalid
    if not isinstance(data, dict):
        raise invalid
    user = User.objects.filter(pk=str(data.get("u", "")), is_active=True).first()
    if user is None or user.email.lower() != str(data.get("e", "")).lower():
        raise invalid  # the account changed its address since (or is gone)
    email_mark_verified(user=user)
    return user
