"""Reads of the providers area that the API and the pages share."""
from platform_app.models import GitConnection, GitInstallation


def git_connections_of(*, workspace):
    return GitConnection.objects.filter(workspace=workspace).order_by("provider")


def git_installations_unclaimed():
    return GitInstallation.objects.filter(workspace__isnull=True).order_by("-created_at")
