"""The deployment platform at scale, through the production server, next to the baselines (bench/harness.py).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/platform .venv/bin/python bench/scale.py
    .venv/bin/python bench/scale.py --scale 0.1 --once --duration 5      # a tenth of the set, quicker

Builds the scale set in a scratch PostgreSQL database with `INSERT ... SELECT generate_series` (each table's rows
are copies of one row the services made, so every column holds what the platform writes): 10,000 workspaces,
100,000 projects (every one served by the edge in each of the last three hours), 1,000,000 ready deployments
(each built in 40 s, with an archive of 1-5 MB) with two events each, ten build-log lines for each of the big
customer's deployments and a 2,000-line log for one of them. The big customer is one workspace holding 5,000 of
the projects and 200,000 of the deployments. Then, with wrk and an API
token of the big customer's owner: the project list, the deployment list (the first page, and a page 5,000 rows
deep through the cursor), one deployment, its events, the replay of the 2,000-line log, the first page again while
one of the customer's deployments becomes ready every 100 ms (each change moves the stamp its kept answers rest
on); the dashboard's project list and deployment page with a signed-in session; each query's rows read against
rows returned (EXPLAIN ANALYZE); a run of each beat task over the whole set: seconds and statements; and the
placement a node's heartbeat runs for the big customer.
Figures and design: docs/performance.md.
"""
import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import Bench, bench_arguments, deployments_churning, lua_requests  # noqa: E402

TOKEN = "svc_benchscale" + "s" * 36
SIZES = {"workspaces": 10_000, "projects": 100_000, "deployments": 1_000_000, "big_projects": 5_000,
         "big_deployments": 200_000, "big_log_lines": 10, "long_log": 2_000}
BEAT_TASKS = ["platform_app.tasks.deployments.deployments_reap_stuck",
              "platform_app.tasks.deployments.deployments_requeue_stale",
              "platform_app.tasks.agents.agents_expire",
              "platform_app.tasks.billing.usage_meter",
              "platform_app.tasks.billing.usage_meter",  # again: the next batch of each hour's archives
              "platform_app.tasks.deployments.deployment_logs_archive"]


def clone(model, template_pk, count: int, overrides: dict) -> int:
    """`count` copies of one row, the columns in `overrides` computed from `g` (1..count) in SQL."""
    from django.db import connection

    meta = model._meta
    columns = [f.column for f in meta.concrete_fields if not (f.primary_key and f.column not in overrides)]
    exprs = [overrides[c].replace("%", "%%") if c in overrides else f'tpl."{c}"' for c in columns]
    sql = (f'INSERT INTO "{meta.db_table}" ({", ".join(chr(34) + c + chr(34) for c in columns)}) '
           f'SELECT {", ".join(exprs)} FROM "{meta.db_table}" tpl, generate_series(1, %s) AS g '
           f'WHERE tpl."{meta.pk.column}" = %s')
    with connection.cursor() as cursor:
        cursor.execute(sql, [count, template_pk])
        return cursor.rowcount


def key(prefix: str, series: str, number: str) -> str:
    """An id in SQL: `<prefix>_<series><number padded>` (24 characters, as the platform's own)."""
    return f"'{prefix}_{series}' || lpad(({number})::text, 19, '0')"


def build_scale_set(scale: float) -> dict:
    from django.db import connection
    from django.utils import timezone

    from platform_app.models import Deployment, DeploymentEvent, LogLine, Project, User, Workspace
    from platform_app.services.identity.keys import sha256_hex
    from platform_app.services.teams.workspaces import workspace_create

    n = {name: max(int(size * scale), 1) for name, size in SIZES.items()}
    n["long_log"], n["big_log_lines"] = SIZES["long_log"], SIZES["big_log_lines"]
    started = time.perf_counter()
    owner = User.objects.create_user(email="big@example.com", password="bench-password-2026", name="Big")
    big = workspace_create(user=owner, name="Big customer", slug="big")
    from platform_app.models import ApiToken

    ApiToken.objects.create(user=owner, name="bench", token_hash=sha256_hex(TOKEN), prefix=TOKEN[:12],
                            scopes=["read"])
    template_project = Project.objects.create(workspace=big, name="template", slug="template", source="upload")
    template = Deployment.objects.create(project=template_project, env="production", branch="main",
                                         status="ready", ready_at=timezone.now(), finished_at=timezone.now(),
                                         framework="static", commit_sha="0" * 40)
    event = DeploymentEvent.objects.create(deployment=template, type="ready", message="Deployment is ready")
    line = LogLine.objects.create(deployment=template, seq=1, text="> building the site with the static builder")

    # a bulk load, as `pg_restore --disable-triggers` does one: the answer stamps' triggers (migration 0037) would
    # run once per row at commit, for stamps nothing has read yet
    with connection.cursor() as cursor:
        cursor.execute("SET session_replication_role = replica")
    others = n["workspaces"] - 1
    clone(Workspace, big.pk, others, {"id": key("org", "s", "g"), "slug": "'scale-' || g", "name": "'Scale ' || g"})
    clone(Project, template_project.pk, n["big_projects"],
          {"id": key("prj", "b", "g"), "slug": "'big-' || g", "name": "'Big ' || g"})
    small = n["projects"] - n["big_projects"]
    clone(Project, template_project.pk, small,
          {"id": key("prj", "s", "g"), "slug": "'p-' || g", "name": "'P ' || g",
           "workspace_id": key("org", "s", f"(g - 1) % {others} + 1")})
    minutes = "now() - (g || ' minutes')::interval"
    # each build ran 40 s and left an archive of 1-5 MB: what metering reads (its builds and storage)
    built = {"created_at": minutes, "started_at": f"{minutes} - interval '40 seconds'", "ready_at": minutes,
             "finished_at": minutes, "artifact_bytes": "1000000 + (g::bigint * 7919) % 4194304"}
    clone(Deployment, template.pk, n["big_deployments"],
          {"id": key("dpl", "b", "g"), "project_id": key("prj", "b", f"(g - 1) % {n['big_projects']} + 1"),
           **built})
    clone(Deployment, template.pk, n["deployments"] - n["big_deployments"],
          {"id": key("dpl", "s", "g"), "project_id": key("prj", "s", f"(g - 1) % {small} + 1"),
           **built})
    for series, count in (("b", n["big_deployments"]), ("s", n["deployments"] - n["big_deployments"])):
        for kind in ("'queued'", "'ready'"):
            clone(DeploymentEvent, event.pk, count, {"deployment_id": key("dpl", series, "g"), "type": kind})
    per = n["big_log_lines"]
    clone(LogLine, line.pk, n["big_deployments"] * per,
          {"deployment_id": key("dpl", "b", f"(g - 1) / {per} + 1"), "seq": f"(g - 1) % {per} + 1",
           "text": "'step ' || ((g - 1) % 10 + 1) || ': compiled ' || g || ' modules in ' || (g % 97) || ' ms'"})
    # the long log's build ended a moment ago: the archive run below leaves it to the log drains for now
    long_log = Deployment.objects.filter(project__workspace=big).exclude(pk=template.pk).order_by("-created_at")[1]
    LogLine.objects.filter(deployment=long_log).delete()
    clone(LogLine, line.pk, n["long_log"],
          {"deployment_id": f"'{long_log.pk}'", "seq": "g", "text": "'line ' || g || ' of the long build log'"})
    Deployment.objects.filter(pk=long_log.pk).update(finished_at=timezone.now())
    with connection.cursor() as cursor:
        cursor.execute("RESET session_replication_role")
        cursor.execute("VACUUM ANALYZE")
    counts = {"workspaces": Workspace.objects.count(), "projects": Project.objects.count(),
              "deployments": Deployment.objects.count(), "events": DeploymentEvent.objects.count(),
              "log lines": LogLine.objects.count()}
    print(f"scale set in {time.perf_counter() - started:.0f} s: "
          + ", ".join(f"{v:,} {k}" for k, v in counts.items()) + f"; build log table {log_table()}", flush=True)
    return {"owner": owner, "big": big, "project": Project.objects.get(pk=f"prj_b{1:019d}"), "long_log": long_log,
            "template": template.pk}


def deep_cursor(url: str, path: str, depth: int) -> str:
    """The path of the page `depth` rows into a cursor-paged list (following `nextCursor` from the first page)."""
    import logging

    import httpx

    logging.getLogger("httpx").setLevel(logging.WARNING)
    headers = {"Authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=url, headers=headers, timeout=60) as client:
        cursor, read = None, 0
        while read < depth:
            answer = client.get(path, params={"limit": 100, **({"cursor": cursor} if cursor else {})})
            if answer.status_code == 429:  # the API's rate limit: wait as it says
                time.sleep(float(answer.headers.get("Retry-After", "1")))
                continue
            answer.raise_for_status()
            page = answer.json()
            read += len(page["items"])
            cursor = page.get("nextCursor")
            if not cursor:
                break
    return f"{path}?cursor={cursor}" if cursor else path


def explainable(*, workspace, project_id: str, deep_path: str) -> dict:
    """The list queries the measured routes run (their first statement of rows), as (sql, params)."""
    from urllib.parse import parse_qs, urlsplit

    from django.db.models import Q

    from platform_app.api.base import _decode_cursor
    from platform_app.services.deployments.selectors import deployments_of
    from platform_app.services.projects.selectors import projects_in

    newest = ("-created_at", "-pk")
    deployments = deployments_of(workspace=workspace).order_by(*newest)
    queries = {"projects, first page": projects_in(workspace=workspace).order_by(*newest)[:21],
               "deployments, first page": deployments[:21]}
    cursor = parse_qs(urlsplit(deep_path).query).get("cursor")
    if cursor:  # a set smaller than the depth has no such page
        created, pk = _decode_cursor(cursor[0])
        queries["deployments, 5,000 rows deep"] = deployments.filter(created_at__lte=created).filter(
            Q(created_at__lt=created) | Q(created_at=created, pk__lt=pk))[:21]
    queries["a project's deployments"] = deployments_of(workspace=workspace,
                                                        project_id=project_id).order_by(*newest)[:21]
    return {name: qs.query.sql_with_params() for name, qs in queries.items()}


def explain(label: str, sql_and_params) -> None:
    """Rows each scan read against what the query returned: a list must read about its page, not the table."""
    from django.db import connection

    sql, params = sql_and_params
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, params)
        plan = cursor.fetchone()[0]
    plan = plan[0] if isinstance(plan, list) else json.loads(plan)[0]
    returned, scanned = plan["Plan"]["Actual Rows"], []

    def walk(node):
        if "Scan" in node["Node Type"]:
            scanned.append(node["Actual Rows"] * node.get("Actual Loops", 1) + node.get("Rows Removed by Filter", 0))
        for child in node.get("Plans", []):
            walk(child)

    walk(plan["Plan"])
    print(f"  EXPLAIN {label}: returns {returned}, reads {sum(scanned)} rows, {plan['Execution Time']:.1f} ms")


def beat_runs() -> None:
    import importlib

    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    done = set()
    for name in BEAT_TASKS:
        module, function = name.rsplit(".", 1)
        label = f"{function} again" if name in done else function
        done.add(name)
        task = getattr(importlib.import_module(module), function)
        started = time.perf_counter()
        with CaptureQueriesContext(connection) as queries:
            result = task.run()
        took = time.perf_counter() - started
        print(f"  beat {label}: {took:.2f} s, {len(queries)} statements, result {result!r}"[:200], flush=True)
        if took > 1:  # over the goal: where its time went
            for query in sorted(queries.captured_queries, key=lambda q: -float(q["time"]))[:3]:
                sql = query["sql"]
                print(f"    {float(query['time']):.2f} s: {sql[:80]} ... {sql[sql.find(' FROM '):][:400]}", flush=True)


def edge_traffic(hours: int = 3) -> None:
    """Every project served in each of the last `hours` finished hours, as the edge's flushes leave it in the cache
    (each project's hour counts, and the hour's set of projects to meter), so metering meets 100,000 projects an
    hour."""
    from django.utils import timezone

    from platform_app.models import Project
    from platform_app.services.automation import edge_metrics as m
    from platform_app.services.billing.meters import hour_floor

    started, ids = time.perf_counter(), list(Project.objects.values_list("pk", flat=True))
    last = int(hour_floor(timezone.now()).timestamp()) // 3600 - 1
    for hour in range(last - hours + 1, last + 1):
        for i in range(0, len(ids), 20_000):
            with m._pending_lock:  # what record() leaves for a flush, without the per-minute counters
                for pk in ids[i:i + 20_000]:
                    m._pending[m._hour_key(pk, hour, "n")] += 7
                    m._pending[m._hour_key(pk, hour, "bytes")] += 7_000
                    m._members[m._due_key(hour)].add(pk)
            m.flush()
    print(f"  edge traffic: {len(ids):,} projects served in each of the last {hours} hours "
          f"({time.perf_counter() - started:.0f} s to write)", flush=True)


def placement_run(big) -> None:
    """What a node's heartbeat places for the big customer: 20 of its projects run on nodes (a start command), the
    rest of its 200,000 deployments are static."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from platform_app.models import AgentNode, Deployment, Project
    from platform_app.services.agents.agents import instances_place

    runtime = list(Deployment.objects.filter(project__workspace=big).order_by("-created_at")[:20])
    Deployment.objects.filter(pk__in=[d.pk for d in runtime]).update(snapshot={"start": "python app.py"})
    for deployment in runtime:
        Project.objects.filter(pk=deployment.project_id).update(production_deployment=deployment)
    AgentNode.objects.create(workspace=big, name="bench-node", token_hash="0" * 64, runtimes=["process"],
                             capacity=100, status=AgentNode.Status.ONLINE)
    for label in ("first (places 20 instances)", "again (nothing to change)"):
        started = time.perf_counter()
        with CaptureQueriesContext(connection) as queries:
            instances_place(workspace=big)
        print(f"  placement for the big customer, {label}: {(time.perf_counter() - started) * 1000:.0f} ms, "
              f"{len(queries)} statements", flush=True)


def log_table_under_builds(template_pk: str, cycles: int = 8, builds: int = 40, lines: int = 500) -> None:
    """Beat minutes with builds finishing: each cycle `builds` builds of `lines` lines end (as long ago as the
    archive waits) and the archive task runs once, as beat runs it every minute; the table after each run. The
    scale set's imported lines are a backlog from before archiving: for this phase their builds count as ended a
    moment ago, so the cycles show the steady state of new builds (the backlog drains LOG_ARCHIVE_BATCH logs a run).
    A bench minute takes seconds, so it runs the VACUUM that autovacuum would run within a real one, and one of the
    deployments after marking the backlog (without it, the first run's query of due logs walks a million dead index
    entries: 1.3 s instead of 0.6)."""
    from datetime import timedelta

    from django.conf import settings
    from django.db import connection
    from django.utils import timezone

    from platform_app.models import Deployment, LogLine
    from platform_app.services.deployments.log_archive import logs_archive_due

    Deployment.objects.filter(log_archive="", status="ready").update(finished_at=timezone.now())
    with connection.cursor() as cursor:  # a million rows just rewritten: what autovacuum does after such an update
        cursor.execute("VACUUM ANALYZE platform_app_deployment")
    line = LogLine.objects.filter(deployment_id=template_pk).values_list("pk", flat=True).first()
    ended = f"'{(timezone.now() - timedelta(minutes=settings.LOG_ARCHIVE_AFTER_MINUTES + 1)).isoformat()}'"
    print(f"  build log table while {builds} builds of {lines:,} lines end a minute: {log_table()} before")
    for cycle in range(1, cycles + 1):
        first = (cycle - 1) * builds
        clone(Deployment, template_pk, builds, {"id": key("dpl", "n", f"g + {first}"), "finished_at": ended})
        clone(LogLine, line, builds * lines, {"deployment_id": key("dpl", "n", f"(g - 1) / {lines} + 1 + {first}"),
                                              "seq": f"(g - 1) % {lines} + 1"})
        grown = log_table()
        started = time.perf_counter()
        archived = logs_archive_due()
        took = time.perf_counter() - started
        with connection.cursor() as cursor:  # what autovacuum does within its minute past 20,000 dead rows (0035)
            cursor.execute("VACUUM platform_app_logline")
        print(f"    minute {cycle}: {grown} with the new logs; archive run {took:.2f} s, {archived} logs; "
              f"then, vacuumed, {log_table()}", flush=True)


def log_table() -> str:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*), pg_size_pretty(pg_total_relation_size('platform_app_logline')) "
                       "FROM platform_app_logline")
        rows, size = cursor.fetchone()
    return f"{rows:,} rows, {size}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=1.0, help="fraction of the scale set (default 1)")
    bench_arguments(parser)
    parser.set_defaults(timeout=1800)  # the whole run takes 15-16 min at full scale, past the benches' 900 s
    args = parser.parse_args()
    with Bench("platform", args) as bench:
        if not bench.scratch_db:
            raise SystemExit("bench/scale.py needs PostgreSQL: set DATABASE_URL")
        made = build_scale_set(args.scale)
        from django.test import Client

        from platform_app.models import Project

        browser = Client()
        browser.force_login(made["owner"])
        cookie = f"sessionid={browser.cookies['sessionid'].value}"
        bench.serve()
        bench.baselines()
        api = {"Authorization": f"Bearer {TOKEN}"}
        project, long_log = made["project"].pk, made["long_log"].pk
        paths = {
            "projects, first page": "/v1/orgs/big/projects",
            "deployments, first page": "/v1/orgs/big/deployments",
            "deployments, 5,000 rows deep": deep_cursor(bench.url, "/v1/orgs/big/deployments", 5_000),
            "a project's deployments": f"/v1/orgs/big/projects/{project}/deployments",
            "one deployment": f"/v1/orgs/big/deployments/{long_log}",
            "its events": f"/v1/orgs/big/deployments/{long_log}/events",
            "its 2,000-line log replayed": f"/v1/orgs/big/deployments/{long_log}/logs/stream",
        }
        # each in pairs with /bench/db: a p95 moves with how wrk's connections fell on the workers, run to run
        for label, path in paths.items():
            bench.paired(f"{label}: {path[:60]}", script=lua_requests([{"path": path, "headers": api}]))
        # kept answers under change: the customer's list while one of its deployments becomes ready every 100 ms
        # (another project than the one EXPLAIN reads below: rows added since the last ANALYZE mislead its plan)
        other = Project.objects.filter(workspace=made["big"]).exclude(pk=made["project"].pk).order_by("pk").first()
        with deployments_churning(other, every_ms=100):
            path = paths["deployments, first page"]
            bench.paired(f"deployments, first page, a deployment ready every 100 ms: {path}",
                         script=lua_requests([{"path": path, "headers": api}]))
        for label, path in {"dashboard projects": "/dashboard/big/",
                            "dashboard deployment": f"/dashboard/big/deployments/{long_log}/"}.items():
            bench.paired(f"{label}: {path}", script=lua_requests([{"path": path, "headers": {"Cookie": cookie}}]))
        print("queries at this size:")
        deep = paths["deployments, 5,000 rows deep"]
        for label, sql in explainable(workspace=made["big"], project_id=project, deep_path=deep).items():
            explain(label, sql)
        print("beat tasks over the whole set:")
        edge_traffic()
        beat_runs()
        print(f"  build log table after one archive run: {log_table()}")
        log_table_under_builds(made["template"])
        placement_run(made["big"])
        print("web workers after the load: " + ", ".join(bench.worker_memory()))


if __name__ == "__main__":
    main()
