"""Factories of the billing area: prices, usage records, billing accounts, invoices, tax ids, payment events,
deployment visits."""
from datetime import UTC, datetime

import factory
from django.utils import timezone
from factory.django import DjangoModelFactory

from platform_app.models import BillingAccount, DeploymentVisit, Invoice, PaymentEvent, Price, TaxId, UsageRecord
from tests.factories import WorkspaceFactory
from tests.platform_app.deployments.factories import DeploymentFactory
from tests.platform_app.projects.factories import ProjectFactory


class PriceFactory(DjangoModelFactory[Price]):
    class Meta:
        model = Price

    meter = factory.Sequence(lambda n: f"test_meter_{n}")
    unit_amount = 1
    unit_size = 60
    unit_label = "minute"
    currency = "usd"
    valid_from = datetime(2000, 1, 1, tzinfo=UTC)


class UsageRecordFactory(DjangoModelFactory[UsageRecord]):
    """One hour of one meter of a project (the hour of now, floored, unless told)."""

    class Meta:
        model = UsageRecord

    project = factory.SubFactory(ProjectFactory)
    workspace = factory.SelfAttribute("project.workspace")
    project_ref = factory.SelfAttribute("project.pk")
    project_name = factory.SelfAttribute("project.name")
    hour = factory.LazyFunction(lambda: timezone.now().replace(minute=0, second=0, microsecond=0))
    meter = "build_seconds"
    quantity = 600


class BillingAccountFactory(DjangoModelFactory[BillingAccount]):
    class Meta:
        model = BillingAccount

    workspace = factory.SubFactory(WorkspaceFactory)


class InvoiceFactory(DjangoModelFactory[Invoice]):
    class Meta:
        model = Invoice

    workspace = factory.SubFactory(WorkspaceFactory)
    provider_id = factory.Sequence(lambda n: f"in_test{n:06d}")
    number = factory.Sequence(lambda n: f"TEST-{n:04d}")
    status = "open"
    total = 1234
    currency = "usd"
    period_start = datetime(2026, 10, 1, tzinfo=UTC)
    period_end = datetime(2026, 11, 1, tzinfo=UTC)
    lines = factory.LazyFunction(lambda: [{"category": "builds", "description": "Build minutes 2026-10",
                                           "quantity": 1234.0, "unit": "minutes", "amount": 1234,
                                           "provider_item_id": "ii_test"}])


class TaxIdFactory(DjangoModelFactory[TaxId]):
    class Meta:
        model = TaxId

    workspace = factory.SubFactory(WorkspaceFactory)
    provider_id = factory.Sequence(lambda n: f"txi_test{n:06d}")
    type = "eu_vat"
    value = "DE136695976"
    country = "DE"


class PaymentEventFactory(DjangoModelFactory[PaymentEvent]):
    class Meta:
        model = PaymentEvent

    event_id = factory.Sequence(lambda n: f"evt_test{n:06d}")
    type = "invoice.paid"


class DeploymentVisitFactory(DjangoModelFactory[DeploymentVisit]):
    class Meta:
        model = DeploymentVisit

    deployment = factory.SubFactory(DeploymentFactory)
    first_at = factory.LazyFunction(timezone.now)
