"""Projects and project groups."""
from django.db import models
from django.utils import timezone

from config.ids import PrefixedIdField

__all__ = ("Project", "ProjectGroup")


class ProjectGroup(models.Model):
    """A named set of projects in a workspace (e.g. the apps of one product)."""

    id = PrefixedIdField(prefix="grp")
    workspace = models.ForeignKey("platform_app.Workspace", on_delete=models.CASCADE, related_name="project_groups")
    name = models.CharField(max_length=100)
    slug = models.SlugField(max_length=64)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ("name",)
        constraints = [models.UniqueConstraint(fields=["workspace", "slug"], name="project_group_unique_slug")]

    def __str__(self):
        return self.slug


class Project(models.Model):
    """Something that gets built and deployed: from a Git repository, an image, a template or uploads."""

    class Source(models.TextChoices):
        GIT = "git"
        IMAGE = "image"
        TEMPLATE = "template"
        UPLOAD = "upload"  # folders sent by the command-line client (`svc deploy`)

    id = PrefixedIdField(prefix="prj")
    workspace = models.ForeignKey("platform_app.Workspace", on_delete=models.CASCADE, related_name="projects")
    group = models.ForeignKey(ProjectGroup, null=True, blank=True, on_delete=models.SET_NULL, related_name="projects")
    name = models.CharField(max_length=100)
    slug = models.SlugField(max_length=63, help_text="DNS label: {slug}.{DEPLOY_DOMAIN} serves production.")
    source = models.CharField(max_length=16, choices=Source.choices, default=Source.GIT)
    # Git source: any URL the git CLI accepts, or a provider repository through a connection.
    git_url = models.CharField(max_length=500, blank=True)
    git_provider = models.CharField(max_length=16, blank=True, help_text="git-a, git-b or git-c")
    git_repo = models.CharField(max_length=200, blank=True, help_text="owner/name at the provider")
    image_ref = models.CharField(max_length=300, blank=True)
    # An image project's registry credentials, {"username", "password"} as JSON encrypted like secret variables
    # (services/env/crypto.py); blank: the registry is asked anonymously. Never answered (docs/images.md).
    registry_credentials_encrypted = models.TextField(blank=True, default="")
    template = models.CharField(max_length=64, blank=True)
    # Build settings; blank means "use what detection finds".
    framework = models.CharField(max_length=32, blank=True)
    install_command = models.CharField(max_length=500, blank=True)
    build_command = models.CharField(max_length=500, blank=True)
    output_directory = models.CharField(max_length=200, blank=True)
    start_command = models.CharField(max_length=500, blank=True)
    root_directory = models.CharField(max_length=200, blank=True)
    production_branch = models.CharField(max_length=200, default="main")
    auto_deploy = models.BooleanField(default=True)
    production_deployment = models.ForeignKey("platform_app.Deployment", null=True, blank=True,
                                              on_delete=models.SET_NULL, related_name="+",
                                              help_text="What {slug}.{DEPLOY_DOMAIN} serves; rollback moves it.")
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ("name",)
        constraints = [models.UniqueConstraint(fields=["slug"], name="project_unique_slug")]
        # a workspace's projects newest first (the API's list) and by name (the dashboard's pages)
        indexes = [models.Index(fields=["workspace", "-created_at", "-id"], name="project_workspace_newest"),
                   models.Index(fields=["workspace", "name"], name="project_workspace_name")]

    def __str__(self):
        return self.slug
