"""`manage.py builder --local` runs a builder for every workspace (what `make run` starts): a node with the
`build` capability that claims builds over the API and runs them in its sandbox. On a machine of its own, run
`python -m platform_app.nodes --server URL --join <manage.py node_invite> --build 2 --no-run` instead: it
needs none of the platform's settings or secrets (docs/isolation.md)."""
import socket

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from platform_app.management.commands.agent import node_runner, run_node


class Command(BaseCommand):
    help = "Run a builder: claim builds and run them in the sandbox."

    def add_arguments(self, parser):
        parser.add_argument("--join", help="a single-use token from manage.py node_invite")
        parser.add_argument("--local", action="store_true", help="make a platform invite and join with it")
        parser.add_argument("--server", default=settings.SITE_URL)
        parser.add_argument("--name", default=f"builder-{socket.gethostname()}")
        parser.add_argument("--slots", type=int, default=2, help="builds at once")

    def handle(self, *args, join, local, server, name, slots, **options):
        runner = node_runner()  # before anything else: no sandbox, no builder
        if local:
            from platform_app.services.agents.agents import agent_invite_create

            _, join = agent_invite_create(workspace=None)
        if not join:
            raise CommandError("Give --join <token> (or --local).")
        run_node(self, runner=runner, join=join, server=server, name=name, capacity=0, run=False,
                 build_slots=max(1, slots),
                 data_dir=settings.DATA_DIR / "builder")
