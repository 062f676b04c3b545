"""`python -m platform_app.nodes`: a node agent and/or builder, without the platform's settings.

    python -m platform_app.nodes --server https://platform.example.com --join agj_... \
        [--name NAME] [--host ADDRESS] [--capacity 4] [--build 2] [--no-run] [--data-dir DIR]

The sandbox comes from SANDBOX_RUNNER (auto, bubblewrap, none); without one the node refuses to start unless
SANDBOX_ALLOW_NONE=true. SANDBOX_HOST_UID / SANDBOX_HOST_GID (65534) are who the sandboxes run as outside when
the node runs as root; SANDBOX_READONLY_PATHS (comma-separated) adds read-only paths (a runtime under /opt);
SANDBOX_CGROUP_PARENT names the cgroup they go under.
"""
import os

# Nothing here may read the platform's settings: should anything try, it fails loudly instead of making a
# development configuration (and its secrets) in the current folder.
os.environ["DJANGO_SETTINGS_MODULE"] = "platform_app.nodes.no_settings"

import argparse  # noqa: E402
import logging  # noqa: E402
import socket  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

from platform_app.nodes.agent import Agent, wait_for_server  # noqa: E402
from platform_app.sandbox import SandboxUnavailable, runner_get  # noqa: E402


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def runner_from_environment():
    return runner_get(os.environ.get("SANDBOX_RUNNER", "auto"), allow_none=_flag("SANDBOX_ALLOW_NONE"),
                      host_uid=int(os.environ.get("SANDBOX_HOST_UID", "65534")),
                      host_gid=int(os.environ.get("SANDBOX_HOST_GID", "65534")),
                      readonly_paths=[p for p in os.environ.get("SANDBOX_READONLY_PATHS", "").split(",") if p],
                      cgroup_parent=os.environ.get("SANDBOX_CGROUP_PARENT", "platform-sandbox"))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m platform_app.nodes", description=__doc__.splitlines()[0])
    parser.add_argument("--server", required=True, help="the platform's address")
    parser.add_argument("--join", required=True, help="a single-use token (POST /v1/orgs/{orgId}/agents/invite, "
                                                      "or manage.py node_invite)")
    parser.add_argument("--name", default=socket.gethostname())
    parser.add_argument("--host", default="127.0.0.1", help="the address the platform's edge reaches instances at")
    parser.add_argument("--capacity", type=int, default=4, help="instances it runs")
    parser.add_argument("--build", type=int, default=0, metavar="N", help="builds it runs at once (0: none)")
    parser.add_argument("--no-run", action="store_true", help="run no instances (a builder only)")
    parser.add_argument("--claim-wait", type=float, default=20.0, help="seconds a claim waits for a build job")
    parser.add_argument("--data-dir", default="node-data", help="the node's own folder (artifacts, scratch)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)
    try:
        runner = runner_from_environment()
    except SandboxUnavailable as exc:
        print(f"node: {exc}", file=sys.stderr)
        return 2
    agent = wait_for_server(lambda: Agent.join(
        server=args.server, token=args.join, name=args.name, runner=runner, data_dir=Path(args.data_dir),
        capacity=args.capacity, host=args.host, run=not args.no_run, build_slots=args.build,
        claim_wait=args.claim_wait))
    print(f"node {agent.node_id} joined {args.server} (sandbox: {runner.name})", flush=True)
    agent.run_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
