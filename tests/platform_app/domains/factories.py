"""Factories of the domains area, and a ready deployment with its artifact on disk (what the edge serves)."""
import secrets

import factory
from django.conf import settings
from factory.django import DjangoModelFactory

from platform_app.models import Deployment, Domain
from tests.platform_app.projects.factories import ProjectFactory


class DomainFactory(DjangoModelFactory[Domain]):
    class Meta:
        model = Domain

    project = factory.SubFactory(ProjectFactory)
    name = factory.Sequence(lambda n: f"site-{n}.example.com")
    verification_token = factory.LazyFunction(lambda: secrets.token_hex(16))


def ready_deployment(project, files: dict, *, branch: str = "main", production: bool = True) -> Deployment:
    """A ready deployment of `project` whose artifact folder holds `files`; the production one by default."""
    deployment = Deployment.objects.create(project=project, branch=branch, status=Deployment.Status.READY,
                                           env="production" if production else "preview")
    deployment.artifact_path = deployment.pk
    deployment.save()
    root = settings.ARTIFACT_ROOT / deployment.pk
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    if production:
        project.production_deployment = deployment
        project.save()
    return deployment
