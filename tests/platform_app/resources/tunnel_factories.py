"""Factories of the tunnel (tokens known: `TunnelFactory(raw=...)` stores that token's hash)."""
import factory
from factory.django import DjangoModelFactory
from django.utils import timezone

from platform_app.models import Tunnel, TunnelConnection, TunnelRequest
from platform_app.services.identity.keys import sha256_hex
from tests.platform_app.projects.factories import ProjectFactory


class TunnelFactory(DjangoModelFactory[Tunnel]):
    class Meta:
        model = Tunnel
        exclude = ("raw",)

    project = factory.SubFactory(ProjectFactory)
    raw = factory.Sequence(lambda n: f"svct_factory{n:06d}")
    token_hash = factory.LazyAttribute(lambda o: sha256_hex(o.raw))
    started_at = factory.LazyFunction(timezone.now)


class TunnelConnectionFactory(DjangoModelFactory[TunnelConnection]):
    class Meta:
        model = TunnelConnection

    tunnel = factory.SubFactory(TunnelFactory)
    token_hash = factory.LazyAttribute(lambda o: o.tunnel.token_hash)
    holder = "test:1"
    client_ip = "127.0.0.1"


class TunnelRequestFactory(DjangoModelFactory[TunnelRequest]):
    class Meta:
        model = TunnelRequest

    connection = factory.SubFactory(TunnelConnectionFactory)
    frame = b"\x00\x00\x00\x02{}"
