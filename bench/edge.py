"""The built-in edge against a plain Django view returning the same bytes, through the production server.

    DATABASE_URL=postgres://... REDIS_URL=redis://... .venv/bin/python bench/edge.py [--once] [--duration 10]

A project `site` with a ready production deployment (a 6 KiB index.html, written straight into ARTIFACT_ROOT)
is served by the edge at `site.localhost`; `/bench/page` (config/bench_views.py) returns the same file's bytes
from memory. Then the same page with three firewall rules that do not match, and with analytics on (the script
injected). The goal is edge ≥ 0.8× the plain view, each figure measured in pairs with it (bench/harness.py).
Then `--hosts` projects (1,000) serving the same artifact, each request to another of their hosts, first alone, then
while a deployment of some other project becomes ready every `--churn-ms` (100) through the service that ends a
build (`deployment_finish_ready`): the edge's host cache is invalidated per project, so the churn must not cost the
1,000 hosts their cached answers (goal: ≥ 0.8× the plain view under churn too).
Last, Caddy (from the OS packages, when installed) serving the same artifact folder straight from disk with the
routes the platform pushes for a static custom domain (`platform_app/services/domains/caddy.py`), against the same
plain view.
"""
import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import Bench, bench_arguments, deployments_churning  # noqa: E402

PAGE = ("<!doctype html><html lang=en><head><meta charset=utf-8><title>Bench site</title></head><body><main>"
        + "<p>A deployed page of a static site, about six kilobytes like a small landing page.</p>" * 70
        + "</main></body></html>")

HOST_LUA = 'wrk.headers["Host"] = "site.localhost"\n'


PLAIN_PAGE = ("/bench/page", "plain Django view, same bytes")  # the baseline every figure here is paired with


def caddy_direct(bench, deployment) -> None:
    """Caddy's file server on the artifact folder (the platform's own static-site routes, plain HTTP), paired
    with the plain view like the edge."""
    from platform_app.services.domains.caddy import _file_routes

    if shutil.which("caddy") is None:
        print("caddy: not installed (apt-get install caddy); Caddy's direct static path not measured")
        return
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    routes, errors = _file_routes([("site.localhost", deployment)])
    config = {"admin": {"disabled": True}, "apps": {"http": {"servers": {"bench": {
        "listen": [f"127.0.0.1:{port}"], "routes": routes, "errors": {"routes": errors},
        "automatic_https": {"disable": True}}}}}}
    config_path = bench.data_dir / "caddy.json"
    config_path.write_text(json.dumps(config))
    caddy = subprocess.Popen(["caddy", "run", "--config", str(config_path)], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, env={**os.environ, "HOME": str(bench.data_dir)})
    try:
        request = urllib.request.Request(f"http://127.0.0.1:{port}/", headers={"Host": "site.localhost"})
        for _ in range(50):
            try:
                with urllib.request.urlopen(request, timeout=2) as answer:
                    assert answer.read() == PAGE.encode(), "caddy served other bytes"
                break
            except OSError:
                time.sleep(0.1)
        bench.paired("Caddy file_server (site.localhost/)", script=HOST_LUA, baseline=PLAIN_PAGE,
                     url=f"http://127.0.0.1:{port}")
    finally:
        caddy.terminate()
        caddy.wait(timeout=10)


MANY_HOSTS_LUA = """
local i = 0
request = function()
  i = (i + 1) %% %(hosts)d
  wrk.headers["Host"] = "h" .. i .. ".localhost"
  return wrk.format(nil, "/")
end
"""


def many_hosts(bench, workspace, *, hosts: int, churn_ms: int) -> None:
    """`hosts` projects on the same artifact, each request to the next host; then the same while a deployment of
    another project becomes ready every `churn_ms`."""
    from platform_app.models import Deployment, Project

    projects = Project.objects.bulk_create(
        [Project(workspace=workspace, name=f"h{n}", slug=f"h{n}") for n in range(hosts)])
    ready = Deployment.objects.bulk_create([Deployment(project=project, env="production", branch="main",
                                                       status="ready", artifact_path="bench-site")
                                            for project in projects])
    for project, deployment in zip(projects, ready):
        project.production_deployment = deployment
    Project.objects.bulk_update(projects, ["production_deployment"])
    script = MANY_HOSTS_LUA % {"hosts": hosts}
    bench.paired(f"edge, {hosts} hosts in turn", script=script, baseline=PLAIN_PAGE)

    churning = Project.objects.create(workspace=workspace, name="churn", slug="churn")
    with deployments_churning(churning, every_ms=churn_ms):
        bench.paired(f"edge, {hosts} hosts, a deployment ready every {churn_ms} ms", script=script,
                     baseline=PLAIN_PAGE)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    bench_arguments(parser)
    parser.add_argument("--hosts", type=int, default=1000, help="projects served in turn (0: skip that part)")
    parser.add_argument("--churn-ms", type=int, default=100, help="a deployment ready this often meanwhile")
    args = parser.parse_args()
    with Bench("edge", args) as bench:
        from django.conf import settings

        from platform_app.models import Deployment, Project, Workspace
        from platform_app.services.edge.analytics import analytics_set
        from platform_app.services.edge.firewall import firewall_rule_create

        artifact = Path(settings.ARTIFACT_ROOT) / "bench-site"
        artifact.mkdir(parents=True)
        (artifact / "index.html").write_text(PAGE)
        os.environ["BENCH_PAGE_FILE"] = str(artifact / "index.html")
        workspace = Workspace.objects.create(name="Bench", slug="bench")
        project = Project.objects.create(workspace=workspace, name="site", slug="site")
        deployment = Deployment.objects.create(project=project, env="production", branch="main", status="ready",
                                               artifact_path="bench-site")
        Project.objects.filter(pk=project.pk).update(production_deployment=deployment)

        bench.serve()
        request = urllib.request.Request(bench.url + "/", headers={"Host": "site.localhost"})
        with urllib.request.urlopen(request, timeout=10) as answer:  # the edge serves the page (else HTTPError)
            assert answer.read() == PAGE.encode(), "the edge served other bytes"
        print(f"page: {len(PAGE.encode())} bytes")
        bench.paired("edge (site.localhost/)", script=HOST_LUA, baseline=PLAIN_PAGE)

        for name, conditions in (("office", [{"field": "ip", "op": "cidr", "value": "2001:db8::/32"}]),
                                 ("admin", [{"field": "path", "op": "prefix", "value": "/admin"}]),
                                 ("scanners", [{"field": "user_agent", "op": "contains", "value": "sqlmap"}])):
            firewall_rule_create(project=project, name=name, action="deny", conditions=conditions)
        analytics_set(project=project, enabled=True)
        # the server's processes see the change within EDGE_LOCAL_CHECK_SECONDS; the warm-up covers it
        bench.paired("edge, 3 firewall rules + analytics on", script=HOST_LUA, baseline=PLAIN_PAGE)
        if args.hosts:
            many_hosts(bench, workspace, hosts=args.hosts, churn_ms=args.churn_ms)
        caddy_direct(bench, deployment)


if __name__ == "__main__":
    main()
