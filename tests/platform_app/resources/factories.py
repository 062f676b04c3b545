"""Factories of the resources area: add-ons, components, volumes."""
import factory
from factory.django import DjangoModelFactory

from platform_app.models import Addon, Component, Volume
from tests.platform_app.projects.factories import ProjectFactory


class AddonFactory(DjangoModelFactory[Addon]):
    """A provisioning add-on row (nothing made on a server)."""

    class Meta:
        model = Addon

    project = factory.SubFactory(ProjectFactory)
    kind = Addon.Kind.POSTGRES
    name = factory.Sequence(lambda n: f"db{n}")


class ComponentFactory(DjangoModelFactory[Component]):
    class Meta:
        model = Component

    project = factory.SubFactory(ProjectFactory)
    name = factory.Sequence(lambda n: f"web{n}")
    kind = Component.Kind.WEB
    start_command = "python3 app.py"
    instance_size = "starter"
    health_check_path = "/"


class VolumeFactory(DjangoModelFactory[Volume]):
    class Meta:
        model = Volume

    component = factory.SubFactory(ComponentFactory)
    name = factory.Sequence(lambda n: f"data{n}")
    mount_path = factory.Sequence(lambda n: f"/data{n}")
    size_gb = 1
