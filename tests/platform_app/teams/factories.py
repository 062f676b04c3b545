"""Factories of the teams area: invitations."""
from datetime import timedelta

import factory
from django.utils import timezone
from factory.django import DjangoModelFactory

from platform_app.models import Invitation
from platform_app.services.identity.keys import sha256_hex
from tests.factories import UserFactory, WorkspaceFactory


class InvitationFactory(DjangoModelFactory[Invitation]):
    """`InvitationFactory(raw="...")` stores the hash of a known plain token."""

    class Meta:
        model = Invitation
        exclude = ("raw",)

    workspace = factory.SubFactory(WorkspaceFactory)
    email = factory.Sequence(lambda n: f"invitee{n}@example.com")
    role = "developer"
    raw = factory.Sequence(lambda n: f"invitation-token-{n:06d}")
    token_hash = factory.LazyAttribute(lambda o: sha256_hex(o.raw))
    invited_by = factory.SubFactory(UserFactory)
    expires_at = factory.LazyFunction(lambda: timezone.now() + timedelta(days=7))
