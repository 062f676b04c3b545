"""Social sign-in: find or create the user of a provider identity."""
from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction

from config.errors import Conflict
from platform_app.models import LinkedIdentity
from platform_app.services.org.growth_events import SIGNED_UP, growth_event_record

User = get_user_model()


@transaction.atomic
def identity_sign_in(*, provider: str, info) -> "User":
    """The linked user; else the account with the same VERIFIED email (linked, not duplicated); else a new one.
    An unverified email never attaches to an existing account."""
    link = LinkedIdentity.objects.select_related("user").filter(provider=provider, subject=info.subject).first()
    if link is not None:
        return link.user
    user = None
    if info.email:
        existing = User.objects.filter(email__iexact=info.email).first()
        if existing is not None:
            if not info.email_verified:
                raise Conflict("An account with this email exists; sign in with it and link the provider, or verify "
                               "the email at the provider.", code="email_unverified")
            user = existing
    if user is None:
        if not info.email:
            raise Conflict("The provider did not share an email address.", code="email_missing")
        user = User.objects.create_user(email=info.email, password=None, name=info.login)
        growth_event_record(event=SIGNED_UP, user=user, properties={"via": provider})
    try:
        with transaction.atomic():
            LinkedIdentity.objects.create(user=user, provider=provider, subject=info.subject, email=info.email)
    except IntegrityError:
        return LinkedIdentity.objects.get(provider=provider, subject=info.subject).user
    return user


def identity_link(*, user, provider: str, info) -> LinkedIdentity:
    link, created = LinkedIdentity.objects.get_or_create(provider=provider, subject=info.subject,
                                                         defaults={"user": user, "email": info.email})
    if not created and link.user_id != user.pk:
        raise Conflict("This provider account is linked to another user.", code="identity_taken")
    return link
