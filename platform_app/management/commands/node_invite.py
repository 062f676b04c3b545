"""`manage.py node_invite [--org ORG]`: print a single-use join token for a node: of the platform (a builder
for every workspace) without `--org`, of that workspace with it."""
from django.core.management.base import BaseCommand, CommandError
from django.db.models import Q


class Command(BaseCommand):
    help = "Print a single-use join token for a node (python -m platform_app.nodes --join <token>)."

    def add_arguments(self, parser):
        parser.add_argument("--org", help="a workspace id or slug (default: the platform's own builders)")

    def handle(self, *args, org, **options):
        from platform_app.models import Workspace
        from platform_app.services.agents.agents import agent_invite_create

        workspace = None
        if org:
            workspace = Workspace.objects.filter(Q(pk=org) | Q(slug=org)).first()
            if workspace is None:
                raise CommandError(f"No workspace {org!r}.")
        invite, token = agent_invite_create(workspace=workspace, by_operator=True)
        self.stdout.write(token)
        self.stderr.write(f"Single use, until {invite.expires_at:%Y-%m-%d %H:%M} UTC.")
