"""Trigger → ready of the static-site template through the whole stack, with the sandbox and without it; trigger →
served of an image, pulled and from the node's cache.

    .venv/bin/python bench/deploy.py [--deployments 20] [--parallel 4] [--images 10]

The production server, the Celery workers (as the Procfile runs them) and a builder node (`python -m
platform_app.nodes --build N`, a process of its own holding no platform setting) serve a scratch database
(bench/harness.py). Each phase joins a fresh builder, with SANDBOX_RUNNER=bubblewrap and then =none, and
triggers `--deployments` deployments of one static-site project through the API, `--parallel` at a time; a
deployment's time is its `readyAt` minus its `createdAt`, as the platform recorded them. Printed: median and p95
per phase, and what the sandbox adds.

Images: a registry (`docker-registry`, started here) holds `--images` busybox images, each its own layers; a node
agent (`python -m platform_app.nodes`, bubblewrap) runs them. For each, a project from the image is deployed twice
through the API: the first deployment pulls it, the second finds its root on the node. A deployment's time runs
from the trigger to the edge answering its project's host from the deployment's own instance, as a visitor sees it
(the heartbeat's long poll, the pull, the sandbox's start, the report and the edge's routing all inside).
"""
import argparse
import os
import secrets
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from itertools import count as counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import ROOT, VENV, Bench, bench_arguments  # noqa: E402


def _seconds(start: str, end: str) -> float:
    parse = lambda s: datetime.fromisoformat(s.replace("Z", "+00:00"))  # noqa: E731
    return (parse(end) - parse(start)).total_seconds()


def _phase(bench: Bench, client, project_url: str, *, runner: str, count: int, parallel: int) -> list[float]:
    node = _node(bench, f"builder-{runner}", ["--build", str(parallel), "--no-run"],
                 {"SANDBOX_RUNNER": runner, "SANDBOX_ALLOW_NONE": "true" if runner == "none" else "false"})

    def one(_):
        created = client.post(project_url, json={"env": "production"}).json()
        url = created["url"].rsplit("/", 1)[0]
        while True:
            body = client.get(f"/v1/orgs/bench/deployments/{created['id']}").json()
            if body["status"] in ("ready", "error"):
                assert body["status"] == "ready", body["errorMessage"]
                return _seconds(body["createdAt"], body["readyAt"])
            time.sleep(0.05)
            assert url

    one(None)  # a first build warms the builder's imports and the page cache
    with ThreadPoolExecutor(parallel) as pool:
        times = list(pool.map(one, range(count)))
    bench._stop(node)
    return times


def _node(bench: Bench, label: str, args: list[str], env: dict, *, workspace=None) -> subprocess.Popen:
    """A node (of `workspace`; without one, a builder of the platform's) in its own folder, once it has joined."""
    from platform_app.services.agents.agents import agent_invite_create

    _, token = agent_invite_create(workspace=workspace)
    bench.data_dir.chmod(0o711)  # the sandbox's own user walks down to the node's folders
    folder = bench.data_dir / f"{label}-{secrets.token_hex(3)}"
    folder.mkdir()
    log = folder.with_suffix(".log")
    node = subprocess.Popen([str(VENV / "python"), "-m", "platform_app.nodes", "--server", bench.url, "--join",
                             token, "--name", label, *args, "--data-dir", str(folder)], cwd=folder,
                            env={"PATH": os.environ["PATH"], "HOME": str(bench.data_dir), "PYTHONPATH": str(ROOT),
                                 "LANG": "C.UTF-8", **env},
                            stdout=open(log, "wb"), stderr=subprocess.STDOUT, start_new_session=True)
    bench.procs.append((label, node, log))
    while b" joined " not in log.read_bytes():
        if node.poll() is not None:
            raise RuntimeError(log.read_text())
        time.sleep(0.2)
    return node


def _images(bench: Bench, client, count: int) -> None:
    """Trigger → served of `count` images, first from the registry, then from the node's cache."""
    from tests.platform_app.images.registry import registry_start

    (bench.data_dir / "registry").mkdir()
    registry = registry_start(bench.data_dir / "registry")
    try:
        _images_through(bench, client, count, registry)
    finally:  # not in bench.procs: the harness stops process groups, and the registry has none of its own
        registry.process.kill()
        registry.process.wait()


def _images_through(bench: Bench, client, count: int, registry) -> None:
    from tests.platform_app.images.registry import busybox_layer, oci_layout

    node = _node(bench, "images", ["--capacity", str(count + 4)], {"SANDBOX_RUNNER": "bubblewrap"},
                 workspace=bench.workspace)
    serve = {"Cmd": ["/bin/sh", "-c", "exec busybox httpd -f -p $PORT -h /www"], "Env": ["PATH=/bin"]}
    numbers, times = counter(), {"first": [], "second": []}

    def deploy(project: dict, marker: str) -> float:
        started = time.monotonic()
        resp = client.post(f"/v1/orgs/bench/projects/{project['id']}/deployments/image", json={})
        assert resp.status_code == 201 and resp.json()["status"] == "ready", resp.text
        instances = f"/v1/orgs/bench/deployments/{resp.json()['id']}/instances"
        while not any(i["status"] == "running" for i in client.get(instances).json()["items"]):
            assert time.monotonic() - started < 60, client.get(instances).json()
            time.sleep(0.01)
        while marker not in (page := client.get("/", headers={"Host": f"{project['slug']}.localhost"})).text:
            assert time.monotonic() - started < 60, page.text
            time.sleep(0.01)
        return time.monotonic() - started

    for _ in range(count + 1):  # the first image warms the node's imports and the registry
        n = next(numbers)
        marker = f"image {n} {secrets.token_hex(4)}"  # in the one layer: each image downloads all of its own
        ref = registry.push(oci_layout(bench.data_dir / f"image-{n}", [busybox_layer([("www/index.html",
                                                                                       marker.encode())])], serve),
                            f"bench/app{n}", "v1")
        project = client.post("/v1/orgs/bench/projects/from-image", json={"name": f"img{n}", "slug": f"img{n}",
                                                                           "imageRef": ref}).json()
        first, second = deploy(project, marker), deploy(project, marker)
        if n:
            times["first"].append(first)
            times["second"].append(second)
    bench._stop(node)
    size = len(busybox_layer())
    for label, line in (("first", f"image, first deployment (pulls {size // 1024} kB)"),
                        ("second", "image, second deployment (cached on the node)")):
        print(f"trigger -> served, {line:<44} median {statistics.median(times[label]) * 1000:6.0f} ms  "
              f"p95 {statistics.quantiles(times[label], n=20)[-1] * 1000:6.0f} ms  (min {min(times[label]) * 1000:.0f},"
              f" max {max(times[label]) * 1000:.0f})", flush=True)
    print("  goal: the second deployment under 1000 ms at the median", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    bench_arguments(parser)
    parser.add_argument("--deployments", type=int, default=20)
    parser.add_argument("--parallel", type=int, default=4)
    parser.add_argument("--images", type=int, default=10, help="images deployed twice each (0: none)")
    args = parser.parse_args()
    import logging

    import httpx

    logging.getLogger("httpx").setLevel(logging.WARNING)
    # the tests' registry listens on loopback, without TLS: the platform and its nodes may pull from there
    open_registry = {"OUTBOUND_ALLOWED_NETWORKS": "127.0.0.0/8", "OUTBOUND_ALLOW_HTTP": "true"}
    with Bench("deploy", args, celery=True, env=open_registry if args.images else {}) as bench:
        from platform_app.models import User
        from platform_app.services.identity.tokens import api_token_create
        from platform_app.services.projects.projects import project_create_from_template, project_update
        from platform_app.services.teams.workspaces import workspace_create

        user = User.objects.create_user(email="bench@example.com", password="bench-password-2026", name="Bench")
        workspace = workspace_create(user=user, name="Bench", slug="bench")
        _, token = api_token_create(user=user, name="bench", scopes=["admin"], expires=None, workspace=workspace)
        # the template as shipped (its files are the output: no command runs), and with a one-line build step
        template = project_create_from_template(workspace=workspace, actor=user, name="site", template="static-site")
        step = project_create_from_template(workspace=workspace, actor=user, name="step", template="static-site")
        project_update(project=step, actor=user, build_command="mkdir -p out && cp *.html *.css out/",
                       output_directory="out")
        bench.workspace = workspace
        bench.serve()
        client = httpx.Client(base_url=bench.url, headers={"Authorization": f"Bearer {token}"}, timeout=30)
        print(f"{args.deployments} deployments per line, {args.parallel} at once")
        for project, what in ((template, "static-site template"), (step, "static site with a build step")):
            url, figures = f"/v1/orgs/bench/projects/{project.pk}/deployments", {}
            for runner in ("bubblewrap", "none"):
                times = _phase(bench, client, url, runner=runner, count=args.deployments, parallel=args.parallel)
                figures[runner] = (statistics.median(times), statistics.quantiles(times, n=20)[-1])
                label = f"{what}, {'sandbox' if runner == 'bubblewrap' else 'no sandbox'}"
                print(f"trigger -> ready, {label:<44} median {figures[runner][0] * 1000:6.0f} ms  "
                      f"p95 {figures[runner][1] * 1000:6.0f} ms  (min {min(times) * 1000:.0f}, "
                      f"max {max(times) * 1000:.0f})", flush=True)
            print(f"  the sandbox adds {(figures['bubblewrap'][0] - figures['none'][0]) * 1000:.0f} ms at the median, "
                  f"{(figures['bubblewrap'][1] - figures['none'][1]) * 1000:.0f} ms at p95", flush=True)
        if args.images:
            _images(bench, client, args.images)


if __name__ == "__main__":
    main()
