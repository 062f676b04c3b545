"""Reads of the env area that the API and the pages share."""
from platform_app.models import SecretFinding


def secret_findings_open(*, project):
    """Findings not ignored (newest sighting first is the caller's order)."""
    return SecretFinding.objects.filter(project=project, ignored_at__isnull=True)
