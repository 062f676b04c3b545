"""Factories of the org area: SSO settings, identities and sessions, allowlist entries, SCIM records, feedback,
growth events and weekly reviews."""
from datetime import date, timedelta

import factory
from factory.django import DjangoModelFactory

from platform_app.models import (Feedback, GrowthEvent, IpAllowlistEntry, ScimGroup, ScimUser, SsoIdentity,
                                 SsoSession, WeeklyReview, WorkspaceSso)
from platform_app.services.env.crypto import encrypt
from platform_app.services.identity.keys import sha256_hex
from tests.factories import UserFactory, WorkspaceFactory
from tests.platform_app.identity.factories import AuthSessionFactory


class WorkspaceSsoFactory(DjangoModelFactory[WorkspaceSso]):
    """Enabled settings of a provider that is not reached (set `issuer` to a local one); `scim_raw` sets a known
    SCIM token."""

    class Meta:
        model = WorkspaceSso
        exclude = ("scim_raw",)

    workspace = factory.SubFactory(WorkspaceFactory)
    enabled = True
    issuer = "https://idp.example.com"
    client_id = "platform-client"
    client_secret_encrypted = factory.LazyFunction(lambda: encrypt("s"))
    allowed_domains = factory.LazyFunction(lambda: ["example.com"])
    scim_raw = None
    scim_enabled = factory.LazyAttribute(lambda o: bool(o.scim_raw))
    scim_token_hash = factory.LazyAttribute(lambda o: sha256_hex(o.scim_raw) if o.scim_raw else "")
    scim_token_prefix = factory.LazyAttribute(lambda o: o.scim_raw[:12] if o.scim_raw else "")


class SsoIdentityFactory(DjangoModelFactory[SsoIdentity]):
    class Meta:
        model = SsoIdentity

    workspace = factory.SubFactory(WorkspaceFactory)
    user = factory.SubFactory(UserFactory)
    issuer = "https://idp.example.com"
    subject = factory.Sequence(lambda n: f"subject-{n}")
    email = factory.LazyAttribute(lambda o: o.user.email)


class SsoSessionFactory(DjangoModelFactory[SsoSession]):
    class Meta:
        model = SsoSession

    session = factory.SubFactory(AuthSessionFactory)
    workspace = factory.SubFactory(WorkspaceFactory)


class IpAllowlistEntryFactory(DjangoModelFactory[IpAllowlistEntry]):
    class Meta:
        model = IpAllowlistEntry

    workspace = factory.SubFactory(WorkspaceFactory)
    cidr = factory.Sequence(lambda n: f"198.51.100.{n % 256}/32")
    note = "office"


class ScimUserFactory(DjangoModelFactory[ScimUser]):
    class Meta:
        model = ScimUser

    workspace = factory.SubFactory(WorkspaceFactory)
    user = factory.SubFactory(UserFactory)
    user_name = factory.LazyAttribute(lambda o: o.user.email)
    emails = factory.LazyAttribute(lambda o: [{"value": o.user.email, "primary": True}])


class ScimGroupFactory(DjangoModelFactory[ScimGroup]):
    class Meta:
        model = ScimGroup

    workspace = factory.SubFactory(WorkspaceFactory)
    display_name = factory.Sequence(lambda n: f"Team {n}")


class FeedbackFactory(DjangoModelFactory[Feedback]):
    class Meta:
        model = Feedback

    message = factory.Sequence(lambda n: f"Feedback number {n}")
    category = "idea"
    page = "/dashboard/"


class GrowthEventFactory(DjangoModelFactory[GrowthEvent]):
    class Meta:
        model = GrowthEvent

    event = "docs_opened"
    source = "client"


class WeeklyReviewFactory(DjangoModelFactory[WeeklyReview]):
    class Meta:
        model = WeeklyReview

    week = factory.Sequence(lambda n: date(2026, 1, 5) + timedelta(weeks=n))
