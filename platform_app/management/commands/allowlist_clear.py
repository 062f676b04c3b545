"""Break-glass: empty a workspace's IP allowlist (every address may reach it again), e.g. after an owner locked
everyone out. `manage.py allowlist_clear <workspace id or slug>`; the audit log records it."""
from django.core.management.base import BaseCommand, CommandError
from django.db.models import Q

from platform_app.models import Workspace
from platform_app.services.org.allowlist import allowlist_clear


class Command(BaseCommand):
    help = "Empty a workspace's IP allowlist (break-glass)."

    def add_arguments(self, parser):
        parser.add_argument("workspace", help="workspace id or slug")

    def handle(self, *args, **options):
        ref = options["workspace"]
        workspace = Workspace.objects.filter(Q(pk=ref) | Q(slug=ref)).first()
        if workspace is None:
            raise CommandError(f"No workspace {ref!r}.")
        deleted = allowlist_clear(workspace=workspace, reason="manage.py allowlist_clear")
        self.stdout.write(f"Removed {deleted} allowlist entr{'y' if deleted == 1 else 'ies'} of {workspace.slug}; "
                          "every address may reach it again.")
