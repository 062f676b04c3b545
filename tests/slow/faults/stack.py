"""What a fault test drives: `Stack` starts gunicorn, Celery worker and beat, a builder node, a redis-server or a
TCP proxy on the module's scratch database, seeds a workspace through the services, and stops everything it
started."""
import contextlib
import json
import secrets

from tests.processes import (RedisServer, TcpProxy, WebServer, child_env, django_script, manage, start_beat,
                             start_node, start_worker)
from tests.scratch_database import ScratchDatabase

RECOVERY = 180  # seconds allowed for a recovery: several process sets may share a small machine
# Short windows, so that the sweeps act within seconds instead of minutes.
FAST_SWEEPS = {"BUILD_LEASE_SECONDS": 3, "BUILD_REAP_INTERVAL_SECONDS": 1, "BUILD_REQUEUE_AFTER_SECONDS": 3,
               "OTP_REDELIVER_AFTER_SECONDS": 3, "OTP_REDELIVER_INTERVAL_SECONDS": 1}
SEED = """
import json
from otp_app.services.keys import otp_key_create
from platform_app.models import User
from platform_app.services.projects.projects import project_create_from_template, project_update
from platform_app.services.identity.tokens import api_token_create
from platform_app.services.teams.workspaces import workspace_create

args = json.loads(%r)
user = User.objects.create_user(email=args["slug"] + "@example.com", password="faults-password-2026", name="Faults")
workspace = workspace_create(user=user, name=args["slug"], slug=args["slug"])
_, token = api_token_create(user=user, name="faults", scopes=["admin"], expires=None, workspace=workspace)
project = project_create_from_template(workspace=workspace, actor=user, name="site", template="static-site")
project_update(project=project, actor=user, build_command=args["build"])
_, otp_key = otp_key_create(workspace=workspace, mode="test", name="faults")
print(json.dumps({"org": workspace.pk, "token": token, "project": project.pk, "otp_key": otp_key}))
"""



class Stack:
    """The processes of one test; `close()` stops them, the last started first."""

    def __init__(self, scratch: ScratchDatabase, log_dir):
        self.scratch, self.log_dir = scratch, log_dir
        self.processes, self._cleanups = [], []

    def env(self, *, database_url: str | None = None, redis_url: str | None = None, **extra) -> dict:
        return child_env(data_dir=self.scratch.data_dir, database_url=database_url or self.scratch.url(),
                         redis_url=redis_url, **{**FAST_SWEEPS, **extra})

    def _keep(self, process):
        self.processes.append(process)
        self._cleanups.append(process.stop)
        return process

    def web(self, env, *, port: int | None = None, name: str = "web") -> WebServer:
        server = WebServer(env=env, log_dir=self.log_dir, port=port, name=name)
        self._keep(server)
        return server.start()

    def worker(self, env, name: str = "worker"):
        return self._keep(start_worker(env=env, log_dir=self.log_dir, name=name))

    def beat(self, env):
        return self._keep(start_beat(env=env, log_dir=self.log_dir))

    def builder(self, env, web: WebServer, name: str = "builder"):
        """A builder node (python -m platform_app.nodes) joined to the platform; sandboxed where bubblewrap works,
        unsandboxed (it says so) on a machine without it."""
        token = manage(env, "node_invite").strip()
        return self._keep(start_node(server=web.url, join=token, data_dir=self.log_dir / name, log_dir=self.log_dir,
                                     name=name, build=1, run=False, SANDBOX_ALLOW_NONE="true"))

    def redis(self) -> RedisServer:
        server = RedisServer(log_dir=self.log_dir)
        self._cleanups.append(server.stop)
        return server.start()

    def proxy(self, host: str, port: int) -> TcpProxy:
        proxy = TcpProxy(host, port)
        self._cleanups.append(proxy.stop)
        return proxy.start()

    def seed(self, env, *, build: str) -> dict:
        """A user, a workspace with an admin API token, a template project with `build` as its build command,
        and an OTP test key."""
        args = json.dumps({"slug": f"faults-{secrets.token_hex(3)}", "build": build})
        return django_script(env, SEED % args)

    def close(self):
        for cleanup in reversed(self._cleanups):
            with contextlib.suppress(Exception):
                cleanup()

    def logs(self) -> str:
        return "\n".join(f"--- {p.name} ---\n{p.log_tail(60)}" for p in self.processes)
