"""Factories of the deployments area: deployments, their events and logs, hooks, doctor reports."""
from datetime import timedelta

import factory
from django.utils import timezone
from factory.django import DjangoModelFactory

from platform_app.models import (BuildJob, Deployment, DeployHook, DeploymentEvent, DoctorReport, LogLine,
                                 RuntimeLogLine, SourceUpload, WebhookDelivery)
from platform_app.services.identity.keys import sha256_hex
from tests.factories import WorkspaceFactory
from tests.platform_app.projects.factories import ProjectFactory


class DeploymentFactory(DjangoModelFactory[Deployment]):
    """A queued preview build of `main` unless told otherwise (the row only: no build is enqueued)."""

    class Meta:
        model = Deployment

    project = factory.SubFactory(ProjectFactory)
    env = "preview"
    branch = "main"


class DeploymentEventFactory(DjangoModelFactory[DeploymentEvent]):
    class Meta:
        model = DeploymentEvent

    deployment = factory.SubFactory(DeploymentFactory)
    type = "queued"


class LogLineFactory(DjangoModelFactory[LogLine]):
    class Meta:
        model = LogLine

    deployment = factory.SubFactory(DeploymentFactory)
    seq = factory.Sequence(lambda n: n + 1)
    text = factory.Sequence(lambda n: f"build output line {n}")


class RuntimeLogLineFactory(DjangoModelFactory[RuntimeLogLine]):
    class Meta:
        model = RuntimeLogLine

    deployment = factory.SubFactory(DeploymentFactory)
    text = factory.Sequence(lambda n: f"runtime line {n}")


class DeployHookFactory(DjangoModelFactory[DeployHook]):
    """`DeployHookFactory(raw="...")` stores the hash of a known secret."""

    class Meta:
        model = DeployHook
        exclude = ("raw",)

    project = factory.SubFactory(ProjectFactory)
    name = factory.Sequence(lambda n: f"hook {n}")
    branch = "main"
    raw = factory.Sequence(lambda n: f"deploy-hook-secret-{n:06d}")
    secret_hash = factory.LazyAttribute(lambda o: sha256_hex(o.raw))


class WebhookDeliveryFactory(DjangoModelFactory[WebhookDelivery]):
    class Meta:
        model = WebhookDelivery

    provider = "git-a"
    delivery_id = factory.Sequence(lambda n: f"delivery-{n}")
    event = "push"


class DoctorReportFactory(DjangoModelFactory[DoctorReport]):
    class Meta:
        model = DoctorReport

    deployment = factory.SubFactory(DeploymentFactory, status=Deployment.Status.ERROR)


class BuildJobFactory(DjangoModelFactory[BuildJob]):
    """A pending job of a building deployment (no source archive behind it)."""

    class Meta:
        model = BuildJob

    deployment = factory.SubFactory(DeploymentFactory, status=Deployment.Status.BUILDING)
    spec = factory.LazyFunction(lambda: {"root": "", "output": ".", "runtime": "static", "commands": [],
                                         "label": "site", "framework": "static", "start": "", "install": "",
                                         "build": ""})
    source = factory.LazyAttribute(lambda o: f"sources/{o.deployment.pk}.tar.gz")


class SourceUploadFactory(DjangoModelFactory[SourceUpload]):
    project = factory.SubFactory(ProjectFactory, source="upload", git_url="")
    sha256 = factory.Sequence(lambda n: f"{n:064x}")
    size = 120
    files = 1
    storage_name = factory.LazyAttribute(lambda o: f"sources/uploads/{o.project.pk}/{o.sha256}.tar.gz")

    class Meta:
        model = SourceUpload
