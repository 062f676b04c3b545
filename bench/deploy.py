"""Trigger → ready of the static-site template through the whole stack, with the sandbox and without it.

    .venv/bin/python bench/deploy.py [--deployments 20] [--parallel 4]

The production server, the Celery workers (as the Procfile runs them) and a builder node (`python -m
platform_app.nodes --build N`, a process of its own holding no platform setting) serve a scratch database
(bench/harness.py). Each phase joins a fresh builder, with SANDBOX_RUNNER=bubblewrap and then =none, and
triggers `--deployments` deployments of one static-site project through the API, `--parallel` at a time; a
deployment's time is its `readyAt` minus its `createdAt`, as the platform recorded them. Printed: median and p95
per phase, and what the sandbox adds.
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
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import ROOT, VENV, Bench, bench_arguments  # noqa: E402


def _seconds(start: str, end: str) -> float:
    parse = lambda s: datetime.fromisoformat(s.replace("Z", "+00:00"))  # noqa: E731
    return (parse(end) - parse(start)).total_seconds()


def _phase(bench: Bench, client, project_url: str, *, runner: str, count: int, parallel: int) -> list[float]:
    from platform_app.services.agents.agents import agent_invite_create

    _, token = agent_invite_create(workspace=None)
    env = {"PATH": os.environ["PATH"], "HOME": str(bench.data_dir), "PYTHONPATH": str(ROOT), "LANG": "C.UTF-8",
           "SANDBOX_RUNNER": runner, "SANDBOX_ALLOW_NONE": "true" if runner == "none" else "false"}
    bench.data_dir.chmod(0o711)  # the sandbox's own user walks down to the builder's folders
    folder = bench.data_dir / f"builder-{runner}-{secrets.token_hex(3)}"
    folder.mkdir()
    log = folder.with_suffix(".log")
    node = subprocess.Popen([str(VENV / "python"), "-m", "platform_app.nodes", "--server", bench.url, "--join",
                             token, "--name", f"bench-{runner}", "--build", str(parallel), "--no-run",
                             "--data-dir", str(folder)], cwd=folder, env=env, stdout=open(log, "wb"),
                            stderr=subprocess.STDOUT, start_new_session=True)
    bench.procs.append((f"builder-{runner}", node, log))
    while b" joined " not in log.read_bytes():
        if node.poll() is not None:
            raise RuntimeError(log.read_text())
        time.sleep(0.2)

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    bench_arguments(parser)
    parser.add_argument("--deployments", type=int, default=20)
    parser.add_argument("--parallel", type=int, default=4)
    args = parser.parse_args()
    import logging

    import httpx

    logging.getLogger("httpx").setLevel(logging.WARNING)
    with Bench("deploy", args, celery=True) as bench:
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


if __name__ == "__main__":
    main()
