"""Factories of the Git area: connections, installations, linked identities, OAuth states."""
from datetime import timedelta

import factory
from django.utils import timezone
from factory.django import DjangoModelFactory

from platform_app.models import GitConnection, GitInstallation, LinkedIdentity, OAuthState
from platform_app.services.identity.keys import sha256_hex
from tests.factories import UserFactory, WorkspaceFactory


class OAuthStateFactory(DjangoModelFactory[OAuthState]):
    class Meta:
        model = OAuthState
        exclude = ("raw",)

    purpose = "signin"
    provider = "git-a"
    raw = factory.Sequence(lambda n: f"oauth-state-{n:06d}")
    state_hash = factory.LazyAttribute(lambda o: sha256_hex(o.raw))
    expires_at = factory.LazyFunction(lambda: timezone.now() + timedelta(minutes=10))


class GitConnectionFactory(DjangoModelFactory[GitConnection]):
    """A connection without a token unless `token_encrypted` is given."""

    class Meta:
        model = GitConnection

    workspace = factory.SubFactory(WorkspaceFactory)
    provider = "git-a"
    account = factory.Sequence(lambda n: f"account{n}")


class GitInstallationFactory(DjangoModelFactory[GitInstallation]):
    class Meta:
        model = GitInstallation

    installation_id = factory.Sequence(lambda n: str(1000 + n))
    account = factory.Sequence(lambda n: f"org{n}")


class LinkedIdentityFactory(DjangoModelFactory[LinkedIdentity]):
    class Meta:
        model = LinkedIdentity

    user = factory.SubFactory(UserFactory)
    provider = "git-a"
    subject = factory.Sequence(lambda n: f"subject-{n}")
    email = factory.LazyAttribute(lambda o: o.user.email)
