"""Factories of the MCP area: OAuth clients, codes, tokens."""
from datetime import timedelta

import factory
from django.utils import timezone
from factory.django import DjangoModelFactory

from platform_app.models import McpAuthorizationCode, McpClient, McpToken
from platform_app.services.identity.keys import sha256_hex
from tests.factories import UserFactory


class McpClientFactory(DjangoModelFactory[McpClient]):
    class Meta:
        model = McpClient

    name = factory.Sequence(lambda n: f"client {n}")
    redirect_uris = factory.LazyFunction(lambda: ["http://127.0.0.1:9/callback"])


class McpAuthorizationCodeFactory(DjangoModelFactory[McpAuthorizationCode]):
    class Meta:
        model = McpAuthorizationCode
        exclude = ("raw",)

    raw = factory.Sequence(lambda n: f"code-{n:08d}")
    code_hash = factory.LazyAttribute(lambda o: sha256_hex(o.raw))
    client = factory.SubFactory(McpClientFactory)
    user = factory.SubFactory(UserFactory)
    redirect_uri = "http://127.0.0.1:9/callback"
    code_challenge = "x" * 43
    expires_at = factory.LazyFunction(lambda: timezone.now() + timedelta(minutes=10))


class McpTokenFactory(DjangoModelFactory[McpToken]):
    """`McpTokenFactory(raw="mcpa_...")` stores the hash of a known access token."""

    class Meta:
        model = McpToken
        exclude = ("raw",)

    raw = factory.Sequence(lambda n: f"mcpa_token{n:08d}")
    client = factory.SubFactory(McpClientFactory)
    user = factory.SubFactory(UserFactory)
    scopes = factory.LazyFunction(lambda: ["read"])
    access_hash = factory.LazyAttribute(lambda o: sha256_hex(o.raw))
    refresh_hash = factory.Sequence(lambda n: sha256_hex(f"mcpr_refresh{n:08d}"))
    expires_at = factory.LazyFunction(lambda: timezone.now() + timedelta(hours=1))
    refresh_expires_at = factory.LazyFunction(lambda: timezone.now() + timedelta(days=30))
