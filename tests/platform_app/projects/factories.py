"""Factories of the projects area."""
import factory
from factory.django import DjangoModelFactory

from platform_app.models import Project, ProjectGroup
from tests.factories import WorkspaceFactory


class ProjectGroupFactory(DjangoModelFactory[ProjectGroup]):
    class Meta:
        model = ProjectGroup

    workspace = factory.SubFactory(WorkspaceFactory)
    name = factory.Sequence(lambda n: f"Group {n}")
    slug = factory.Sequence(lambda n: f"group-{n}")


class ProjectFactory(DjangoModelFactory[Project]):
    class Meta:
        model = Project

    workspace = factory.SubFactory(WorkspaceFactory)
    name = factory.Sequence(lambda n: f"Project {n}")
    slug = factory.Sequence(lambda n: f"project-{n}")
    source = Project.Source.GIT
    git_url = "https://git.example.com/acme/site.git"
    production_branch = "main"
