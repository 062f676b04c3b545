"""Factories of the environment area: environments, variables (encrypted like the service does), findings."""
import factory
from factory.django import DjangoModelFactory

from platform_app.models import Environment, EnvVar, EnvVarSlot, PreviewProtection, SecretFinding
from platform_app.services.env.crypto import encrypt
from tests.platform_app.projects.factories import ProjectFactory


class EnvironmentFactory(DjangoModelFactory[Environment]):
    class Meta:
        model = Environment

    project = factory.SubFactory(ProjectFactory)
    name = factory.Sequence(lambda n: f"staging-{n}")
    branch_pattern = "release/*"


class EnvVarFactory(DjangoModelFactory[EnvVar]):
    """`EnvVarFactory(value="...")` stores the value encrypted. No slots: use the API for the uniqueness rule."""

    class Meta:
        model = EnvVar
        exclude = ("value",)

    project = factory.SubFactory(ProjectFactory)
    key = factory.Sequence(lambda n: f"VAR_{n}")
    value = "value"
    value_encrypted = factory.LazyAttribute(lambda o: encrypt(o.value))
    targets = factory.LazyFunction(lambda: ["production", "preview"])


class EnvVarSlotFactory(DjangoModelFactory[EnvVarSlot]):
    class Meta:
        model = EnvVarSlot

    env_var = factory.SubFactory(EnvVarFactory)
    project = factory.SelfAttribute("env_var.project")
    key = factory.SelfAttribute("env_var.key")
    target = "production"


class SecretFindingFactory(DjangoModelFactory[SecretFinding]):
    class Meta:
        model = SecretFinding

    project = factory.SubFactory(ProjectFactory)
    fingerprint = factory.Sequence(lambda n: f"{n:064x}")
    rule = "github-token"
    file = "ci.yml"
    line = 1
    preview = "ghp_****"


class PreviewProtectionFactory(DjangoModelFactory[PreviewProtection]):
    class Meta:
        model = PreviewProtection

    project = factory.SubFactory(ProjectFactory)
    mode = PreviewProtection.Mode.MEMBERS
