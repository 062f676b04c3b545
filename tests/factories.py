"""Factories shared by every app's tests: users (and staff), groups, workspaces, memberships, tokens."""
import factory
from django.utils import timezone
from django.contrib.auth.models import Group
from factory.django import DjangoModelFactory

from platform_app.models import AnswerStamp, ApiToken, Membership, User, Workspace
from platform_app.services.identity.keys import sha256_hex

PASSWORD = "correct-horse-battery-9"


class UserFactory(DjangoModelFactory[User]):
    class Meta:
        model = User
        skip_postgeneration_save = True

    email = factory.Sequence(lambda n: f"user{n}@example.com")
    name = factory.Faker("name")
    email_verified_at = factory.LazyFunction(timezone.now)  # `email_verified_at=None`: an unverified account

    @factory.post_generation
    def password(self, create, extracted, **kwargs):
        self.set_password(extracted or PASSWORD)
        if create:
            self.save(update_fields=["password"])


class WorkspaceFactory(DjangoModelFactory[Workspace]):
    class Meta:
        model = Workspace

    name = factory.Sequence(lambda n: f"Workspace {n}")
    slug = factory.Sequence(lambda n: f"workspace-{n}")


class AnswerStampFactory(DjangoModelFactory[AnswerStamp]):
    """A stamp as the triggers leave it (only they write stamps)."""

    class Meta:
        model = AnswerStamp

    workspace_id = factory.LazyFunction(lambda: WorkspaceFactory().pk)
    version = 1


class MembershipFactory(DjangoModelFactory[Membership]):
    class Meta:
        model = Membership

    workspace = factory.SubFactory(WorkspaceFactory)
    user = factory.SubFactory(UserFactory)
    role = "owner"


class ApiTokenFactory(DjangoModelFactory[ApiToken]):
    """`ApiTokenFactory(raw="svc_...")` sets the hash of a known plain value."""

    class Meta:
        model = ApiToken
        exclude = ("raw",)

    user = factory.SubFactory(UserFactory)
    name = factory.Sequence(lambda n: f"token {n}")
    raw = factory.Sequence(lambda n: f"svc_testtoken{n:06d}abcdefghijklmnopqrstuvwxyz")
    prefix = factory.LazyAttribute(lambda o: o.raw[:12])
    token_hash = factory.LazyAttribute(lambda o: sha256_hex(o.raw))
    scopes = factory.LazyFunction(lambda: ["admin"])


class SuperuserFactory(UserFactory):
    """Staff with every permission: what the Django admin is for."""

    is_staff = True
    is_superuser = True


class GroupFactory(DjangoModelFactory[Group]):
    class Meta:
        model = Group

    name = factory.Sequence(lambda n: f"group {n}")
