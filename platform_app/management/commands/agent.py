"""`manage.py agent --join <invite-token> [--server URL]` runs a node agent; `--local <org>` makes its own invite
first (the one `make run` starts). The node itself is platform_app/nodes (`python -m platform_app.nodes` runs it
without the platform's settings, on a machine that holds none of its secrets)."""
import socket

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db.models import Q

from platform_app.nodes.agent import Agent, wait_for_server
from platform_app.sandbox import SandboxUnavailable


def node_runner():
    """The sandbox from the settings; production refuses to run strangers' code without one."""
    from platform_app.services.deployments.build_jobs import build_runner

    try:
        return build_runner()
    except SandboxUnavailable as exc:
        raise CommandError(str(exc))


def run_node(command: BaseCommand, *, runner, join: str, server: str, name: str, capacity: int, run: bool,
             build_slots: int, data_dir):
    import logging

    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per heartbeat is noise
    try:
        agent = wait_for_server(lambda: Agent.join(server=server, token=join, name=name, runner=runner,
                                                   data_dir=data_dir, capacity=capacity, run=run,
                                                   build_slots=build_slots))
    except ConnectionError:
        raise CommandError(f"{server} did not answer.")
    except Exception as exc:  # noqa: BLE001 - the platform refused the join: say what it said
        raise CommandError(f"Join refused: {getattr(getattr(exc, 'response', None), 'text', exc)}")
    command.stdout.write(f"node {agent.node_id} joined {server} (sandbox: {runner.name})")
    agent.run_forever()


class Command(BaseCommand):
    help = "Run a node agent: heartbeat, run assigned deployments in sandboxes, report instances."

    def add_arguments(self, parser):
        parser.add_argument("--join", help="a single-use token from POST /v1/orgs/{orgId}/agents/invite")
        parser.add_argument("--local", metavar="ORG", help="create an invite for this workspace and join with it")
        parser.add_argument("--server", default=settings.SITE_URL)
        parser.add_argument("--name", default=socket.gethostname())
        parser.add_argument("--capacity", type=int, default=4)

    def handle(self, *args, join, local, server, name, capacity, **options):
        runner = node_runner()  # before anything else: no sandbox, no node
        if local:
            from platform_app.models import Workspace
            from platform_app.services.agents.agents import agent_invite_create

            workspace = Workspace.objects.filter(Q(pk=local) | Q(slug=local)).first()
            if workspace is None:
                raise CommandError(f"No workspace {local!r}.")
            _, join = agent_invite_create(workspace=workspace, by_operator=True)
        if not join:
            raise CommandError("Give --join <token> (or --local <org>).")
        run_node(self, runner=runner, join=join, server=server, name=name, capacity=capacity, run=True, build_slots=0,
                 data_dir=settings.DATA_DIR / "agent")
