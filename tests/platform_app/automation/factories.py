"""Factories of the automation area: cron jobs and runs, log drains, alert rules and alerts (secrets known)."""
import factory
from django.utils import timezone
from factory.django import DjangoModelFactory

from platform_app.models import Alert, AlertRule, CronJob, CronRun, LogDrain, LogDrainDelivery
from platform_app.services.env.crypto import encrypt
from tests.platform_app.projects.factories import ProjectFactory


class CronJobFactory(DjangoModelFactory[CronJob]):
    """`CronJobFactory(raw="...")` stores that secret (encrypted)."""

    class Meta:
        model = CronJob
        exclude = ("raw",)

    project = factory.SubFactory(ProjectFactory)
    schedule = "* * * * *"
    path = "/api/cron"
    raw = factory.Sequence(lambda n: f"svcs_cron{n:06d}")
    secret_encrypted = factory.LazyAttribute(lambda o: encrypt(o.raw))


class CronRunFactory(DjangoModelFactory[CronRun]):
    class Meta:
        model = CronRun

    job = factory.SubFactory(CronJobFactory)
    scheduled_for = factory.LazyFunction(lambda: timezone.now().replace(second=0, microsecond=0))


class LogDrainFactory(DjangoModelFactory[LogDrain]):
    class Meta:
        model = LogDrain
        exclude = ("raw",)

    project = factory.SubFactory(ProjectFactory)
    url = "https://logs.example.com/in"
    sources = factory.LazyFunction(lambda: ["build"])
    raw = factory.Sequence(lambda n: f"svcs_drain{n:06d}")
    secret_encrypted = factory.LazyAttribute(lambda o: encrypt(o.raw))


class AlertRuleFactory(DjangoModelFactory[AlertRule]):
    class Meta:
        model = AlertRule
        exclude = ("raw",)

    project = factory.SubFactory(ProjectFactory)
    name = factory.Sequence(lambda n: f"rule {n}")
    metric = "deployment_failed"
    threshold = 1
    channels = factory.LazyFunction(lambda: [{"type": "email", "to": ["ops@example.com"]}])
    raw = factory.Sequence(lambda n: f"svcs_alert{n:06d}")
    secret_encrypted = factory.LazyAttribute(lambda o: encrypt(o.raw))


class AlertFactory(DjangoModelFactory[Alert]):
    class Meta:
        model = Alert

    rule = factory.SubFactory(AlertRuleFactory)


class LogDrainDeliveryFactory(DjangoModelFactory[LogDrainDelivery]):
    class Meta:
        model = LogDrainDelivery

    drain = factory.SubFactory(LogDrainFactory)
    lines = 3
    delivered = True
    status_code = 200
