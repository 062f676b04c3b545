"""Factories of the deployments area: deployments, their events and logs, hooks, doctor reports, node agents."""
from datetime import timedelta

import factory
from django.utils import timezone
from factory.django import DjangoModelFactory

from platform_app.models import (AgentInvite, AgentNode, Deployment, DeployHook, DeploymentEvent, DoctorReport,
                                 Instance, LogLine, RuntimeLogLine, WebhookDelivery)
from platform_app.services.keys import sha256_hex
from tests.factories import WorkspaceFactory
from tests.platform_app.teams.factories import ProjectFactory


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


class AgentInviteFactory(DjangoModelFactory[AgentInvite]):
    class Meta:
        model = AgentInvite
        exclude = ("raw",)

    workspace = factory.SubFactory(WorkspaceFactory)
    raw = factory.Sequence(lambda n: f"agj_invite{n:06d}")
    token_hash = factory.LazyAttribute(lambda o: sha256_hex(o.raw))
    expires_at = factory.LazyFunction(lambda: timezone.now() + timedelta(hours=1))


class AgentNodeFactory(DjangoModelFactory[AgentNode]):
    """`AgentNodeFactory(raw="agn_...")` stores the hash of a known node token."""

    class Meta:
        model = AgentNode
        exclude = ("raw",)

    workspace = factory.SubFactory(WorkspaceFactory)
    name = factory.Sequence(lambda n: f"node-{n}")
    raw = factory.Sequence(lambda n: f"agn_node{n:06d}")
    token_hash = factory.LazyAttribute(lambda o: sha256_hex(o.raw))
    runtimes = factory.LazyFunction(lambda: ["node"])


class InstanceFactory(DjangoModelFactory[Instance]):
    class Meta:
        model = Instance

    deployment = factory.SubFactory(DeploymentFactory, status=Deployment.Status.READY)
    node = factory.SubFactory(AgentNodeFactory, workspace=factory.SelfAttribute("..deployment.project.workspace"))
