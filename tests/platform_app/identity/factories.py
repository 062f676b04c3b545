"""Factories of the identity area: sign-in sessions, refresh tokens, MFA devices, attempt counters, audit events."""
import time
from datetime import timedelta

import factory
from django.utils import timezone
from django_otp.plugins.otp_totp.models import TOTPDevice
from factory.django import DjangoModelFactory

from platform_app.models import AttemptCounter, AuditEvent, AuthSession, DeviceAuthorization, RefreshToken
from platform_app.services.identity.keys import sha256_hex
from tests.factories import UserFactory


class AuthSessionFactory(DjangoModelFactory[AuthSession]):
    class Meta:
        model = AuthSession

    user = factory.SubFactory(UserFactory)
    ip = "127.0.0.1"


class RefreshTokenFactory(DjangoModelFactory[RefreshToken]):
    class Meta:
        model = RefreshToken
        exclude = ("raw",)

    session = factory.SubFactory(AuthSessionFactory)
    raw = factory.Sequence(lambda n: f"refresh-token-{n:06d}")
    token_hash = factory.LazyAttribute(lambda o: sha256_hex(o.raw))
    expires_at = factory.LazyFunction(lambda: timezone.now() + timedelta(days=30))


class AttemptCounterFactory(DjangoModelFactory[AttemptCounter]):
    class Meta:
        model = AttemptCounter

    key = factory.Sequence(lambda n: f"signin:pair:user{n}@example.com|127.0.0.1")
    window_start = factory.LazyFunction(lambda: int(time.time()) // 60 * 60)
    expires_at = factory.LazyAttribute(lambda o: o.window_start + 60)
    count = 1


class AuditEventFactory(DjangoModelFactory[AuditEvent]):
    class Meta:
        model = AuditEvent

    actor = factory.SubFactory(UserFactory)
    action = "workspace.updated"


class TOTPDeviceFactory(DjangoModelFactory[TOTPDevice]):
    """A confirmed authenticator app; `confirmed=False` for one still being set up."""

    class Meta:
        model = TOTPDevice

    user = factory.SubFactory(UserFactory)
    name = "Phone"
    confirmed = True


class DeviceAuthorizationFactory(DjangoModelFactory[DeviceAuthorization]):
    class Meta:
        model = DeviceAuthorization

    device_code_hash = factory.Sequence(lambda n: f"{n:064x}")
    user_code_hash = factory.Sequence(lambda n: f"{n + 10**9:064x}")
    client_id = "svc-cli"
    scopes = factory.LazyFunction(lambda: ["read", "deploy"])
    expires_at = factory.LazyFunction(lambda: timezone.now() + timedelta(minutes=15))
