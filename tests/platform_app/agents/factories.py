"""Factories of the agents area: invites, nodes, instances."""
from datetime import timedelta

import factory
from django.utils import timezone
from factory.django import DjangoModelFactory

from platform_app.models import AgentInvite, AgentNode, Deployment, Instance
from platform_app.services.identity.keys import sha256_hex
from tests.factories import WorkspaceFactory
from tests.platform_app.deployments.factories import DeploymentFactory


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
