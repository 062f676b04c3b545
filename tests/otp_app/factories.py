import factory
from factory.django import DjangoModelFactory

from otp_app.models import ApiKey
from platform_app.services.keys import sha256_hex
from tests.factories import WorkspaceFactory


class ApiKeyFactory(DjangoModelFactory[ApiKey]):
    """`ApiKeyFactory(raw=...)` stores the hash of a known plain key."""

    class Meta:
        model = ApiKey
        exclude = ("raw",)

    workspace = factory.SubFactory(WorkspaceFactory)
    mode = "test"
    raw = factory.LazyAttributeSequence(lambda o, n: f"svc_{o.mode}_key{n:04d}" + "z" * 30)
    prefix = factory.LazyAttribute(lambda o: o.raw[:16])
    key_hash = factory.LazyAttribute(lambda o: sha256_hex(o.raw))
