"""Social sign-in: find or create the user of a provider identity.

A provider's word on an email address counts only when it says the address is verified (OIDC `email_verified`,
git-a's verified primary address, git-b's `confirmed_at`): such an address is verified for the account too (no link
needed). An address the provider does not vouch for never joins an existing account, and a vouched-for address never
joins an account whose own address is unverified: whoever registered it first with a password proved nothing, and
joining would hand the real owner's sign-ins to them."""
from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.utils import timezone

from config.errors import Conflict
from platform_app.models import LinkedIdentity
from platform_app.services.identity.email_verification import (email_is_verified, email_mark_verified,
                                                                email_verification_mail)
from platform_app.services.org.growth_events import SIGNED_UP, growth_event_record

User = get_user_model()


@transaction.atomic
def identity_sign_in(*, provider: str, info) -> "User":
    """The linked user; else the account with the same VERIFIED email (linked, not duplicated); else a new one.
    An unverified email never attaches to an existing account."""
    link = LinkedIdentity.objects.select_related("user").filter(provider=provider, subject=info.subject).first()
    if link is not None:
        if _vouched(info, link.user.email):
            email_mark_verified(user=link.user)  # the account's own identity vouches for its address
        return link.user
    user = None
    if info.email:
        existing = User.objects.filter(email__iexact=info.email).first()
        if existing is not None:
            if not info.email_verified:
                raise Conflict("An account with this email exists; sign in with it and link the provider, or verify "
                               "the email at the provider.", code="email_unverified")
            if not email_is_verified(existing):
                raise Conflict("An account with this email exists but has not verified it: sign in with its "
                               "password and verify the address first.", code="account_unverified")
            user = existing
    if user is None:
        if not info.email:
            raise Conflict("The provider did not share an email address.", code="email_missing")
        user = User.objects.create_user(email=info.email, password=None, name=info.login,
                                        email_verified_at=timezone.now() if info.email_verified else None)
        if not info.email_verified:
            email_verification_mail(user)
        growth_event_record(event=SIGNED_UP, user=user, properties={"via": provider})
    try:
        with transaction.atomic():
            LinkedIdentity.objects.create(user=user, provider=provider, subject=info.subject, email=info.email)
    except IntegrityError:
        return LinkedIdentity.objects.get(provider=provider, subject=info.subject).user
    return user


def _vouched(info, email: str) -> bool:
    return bool(info.email_verified and info.email and info.email.lower() == (email or "").lower())


def identity_link(*, user, provider: str, info) -> LinkedIdentity:
    link, created = LinkedIdentity.objects.get_or_create(provider=provider, subject=info.subject,
                                                         defaults={"user": user, "email": info.email})
    if not created and link.user_id != user.pk:
        raise Conflict("This provider account is linked to another user.", code="identity_taken")
    return link
