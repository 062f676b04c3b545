"""Factories of the teams area: projects, groups, invitations."""
from datetime import timedelta

import factory
from django.utils import timezone
from factory.django import DjangoModelFactory

from platform_app.models import Invitation, Project, ProjectGroup
from platform_app.services.keys import sha256_hex
from tests.factories import UserFactory, WorkspaceFactory


class ProjectGroupFactory(DjangoModelFactory[ProjectGroup]):
    class Meta:
        model = ProjectGroup

    workspace = factory.SubFactory(WorkspaceFactory)
    name = factory.Sequence(lambda n: f"Group {n}")
    slug = factory.Sequence(lambda n: f"group-{n}")


class ProjectFactory(DjangoModelFactory[Project]):
    class Meta:
        model = Project

    workspace = factory.SubFactory(WorkspaceFactory)
    name = factory.Sequence(lambda n: f"Project {n}")
    slug = factory.Sequence(lambda n: f"project-{n}")
    source = Project.Source.GIT
    git_url = "https://git.example.com/acme/site.git"
    production_branch = "main"


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
