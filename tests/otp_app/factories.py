"""Factories of the OTP service: keys, records, deliveries, balances, routing."""
import uuid
from datetime import timedelta

import factory
from django.utils import timezone
from factory.django import DjangoModelFactory

from config.ids import new_id
from otp_app.models import (ApiKey, Balance, Charge, Delivery, IdempotencyKey, OtpRecord, RoutingRule, SandboxMessage,
                            WorkspacePolicy)
from platform_app.services.identity.keys import sha256_hex
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


class OtpRecordFactory(DjangoModelFactory[OtpRecord]):
    """A sent SMS code. `OtpRecordFactory(code="123456")` stores the hash of a known code."""

    class Meta:
        model = OtpRecord
        exclude = ("code",)

    api_key = factory.SubFactory(ApiKeyFactory)
    workspace = factory.SelfAttribute("api_key.workspace")
    mode = factory.SelfAttribute("api_key.mode")
    recipient = "+14155550123"
    channel = "sms"
    route = factory.LazyFunction(lambda: ["sms"])
    code = "123456"
    code_hash = factory.LazyAttribute(lambda o: _code_hash(o.id, o.code))
    attempts_left = 5
    expires_at = factory.LazyFunction(lambda: timezone.now() + timedelta(minutes=10))
    id = factory.LazyFunction(lambda: new_id("otp"))


def _code_hash(record_id: str, code: str) -> str:
    from otp_app.services.codes import code_hash

    return code_hash(record_id, code)


class DeliveryFactory(DjangoModelFactory[Delivery]):
    class Meta:
        model = Delivery

    record = factory.SubFactory(OtpRecordFactory)
    send_number = 1
    channel = factory.SelfAttribute("record.channel")
    status = Delivery.Status.SENT


class IdempotencyKeyFactory(DjangoModelFactory[IdempotencyKey]):
    class Meta:
        model = IdempotencyKey

    record = factory.SubFactory(OtpRecordFactory)
    api_key = factory.SelfAttribute("record.api_key")
    key = factory.LazyFunction(uuid.uuid4)
    request_hash = "0" * 64


class BalanceFactory(DjangoModelFactory[Balance]):
    class Meta:
        model = Balance

    workspace = factory.SubFactory(WorkspaceFactory)
    amount = 1000
    currency = "USD"


class ChargeFactory(DjangoModelFactory[Charge]):
    class Meta:
        model = Charge

    delivery = factory.SubFactory(DeliveryFactory, record__api_key__mode="live")
    workspace = factory.SelfAttribute("delivery.record.workspace")
    channel = factory.SelfAttribute("delivery.channel")
    amount = 5
    currency = "USD"


class SandboxMessageFactory(DjangoModelFactory[SandboxMessage]):
    class Meta:
        model = SandboxMessage

    record = factory.SubFactory(OtpRecordFactory)
    api_key = factory.SelfAttribute("record.api_key")
    channel = factory.SelfAttribute("record.channel")
    recipient = factory.SelfAttribute("record.recipient")
    code = "123456"
    text = factory.LazyAttribute(lambda o: f"Your code is {o.code}")


class RoutingRuleFactory(DjangoModelFactory[RoutingRule]):
    class Meta:
        model = RoutingRule

    workspace = factory.SubFactory(WorkspaceFactory)
    country = "*"
    channels = factory.LazyFunction(lambda: ["whatsapp", "sms"])


class WorkspacePolicyFactory(DjangoModelFactory[WorkspacePolicy]):
    class Meta:
        model = WorkspacePolicy

    workspace = factory.SubFactory(WorkspaceFactory)
    allowed_countries = factory.LazyFunction(list)
