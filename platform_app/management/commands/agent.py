"""`manage.py agent --join <invite-token> [--server URL]` runs a node agent; `--local <org>` makes its own
invite first (the one `make run` starts)."""
import socket
import time

import httpx
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db.models import Q

from platform_app.agent_runner import AgentRunner


class Command(BaseCommand):
    help = "Run a node agent: heartbeat, run assigned deployments, report instances."

    def add_arguments(self, parser):
        parser.add_argument("--join", help="a single-use token from POST /v1/orgs/{orgId}/agents/invite")
        parser.add_argument("--local", metavar="ORG", help="create an invite for this workspace and join with it")
        parser.add_argument("--server", default=settings.SITE_URL)
        parser.add_argument("--name", default=socket.gethostname())
        parser.add_argument("--capacity", type=int, default=4)

    def handle(self, *args, join, local, server, name, capacity, **options):
        import logging

        logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per heartbeat is noise
        if local:
            from platform_app.models import Workspace
            from platform_app.services.agents.agents import agent_invite_create

            workspace = Workspace.objects.filter(Q(pk=local) | Q(slug=local)).first()
            if workspace is None:
                raise CommandError(f"No workspace {local!r}.")
            _, join = agent_invite_create(workspace=workspace)
        if not join:
            raise CommandError("Give --join <token> (or --local <org>).")
        for attempt in range(30):  # the web server may still be starting
            try:
                runner = AgentRunner.join(server=server, token=join, name=name, capacity=capacity)
                break
            except httpx.ConnectError:
                time.sleep(1)
            except httpx.HTTPStatusError as exc:
                raise CommandError(f"Join refused: {exc.response.text}")
        else:
            raise CommandError(f"{server} did not answer.")
        self.stdout.write(f"agent {runner.node_id} joined {server}")
        runner.run_forever()
