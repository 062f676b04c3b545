"""Directory search at scale, through the production server, next to the baselines (bench/harness.py).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/platform .venv/bin/python bench/warehouse.py
    .venv/bin/python bench/warehouse.py --facilities 100000 --once      # smaller and quicker (SQLite without URL)

Builds the scale set in a scratch database: the real facilities of both extracts (import_osm), then copies of
them with shifted positions and outlines, marked SYNTHETIC (slugs `synthetic-<n>-...`, source file `SYNTHETIC
scale copy`), written with PostgreSQL COPY (bulk inserts on SQLite). Then the import's post-steps (facets,
VACUUM/ANALYZE), and wrk against four typical searches, repeated as a popular search is (served from what each
web process keeps after the first time), then a search whose filters change on every request (nothing kept
applies), /api/regions, the HTML search and region pages and the map a region page frames. Also prints the larger
extract's import time and peak memory. Figures and design: docs/performance.md.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.harness import Bench, bench_arguments, lua_requests  # noqa: E402

DATA = ROOT / "warehouse_app" / "data" / "osm"
SYNTHETIC = "SYNTHETIC scale copy"
SEARCHES = [
    "/api/warehouses/search?type=industrial",
    "/api/warehouses/search?region=oberland&min_area=1000",
    "/api/warehouses/search?country=Liechtenstein&type=commercial&max_area=5000",
    "/api/warehouses/search?q=amazon",
]
# The HTML pages a visitor sees: the search page with the API's first search (the same search service), its
# second page, a region page, and the map it frames as a browser first asks for it (docs/warehouse.md)
PAGES = ["/warehouses/search/?type=industrial", "/warehouses/search/?type=industrial&page=2", "/warehouses/region/oberland/"]
REGION_MAP = {"path": "/warehouses/region/oberland/map.svg", "headers": {"Accept-Encoding": "gzip, deflate, br"}}
# A new filter set every request (a minimum area drawn from 500,000 values): nothing a process kept applies, so
# each request plans the count's estimate and reads its page. What a search costs the first time.
UNCACHED_LUA = """
init = function(args) math.randomseed(os.time() * 100 + math.random(0, 99)) end
request = function()
  return wrk.format("GET", string.format("/api/warehouses/search?type=industrial&min_area=%.2f",
    math.random(0, 499999) / 100))
end
"""
COLUMNS = ("slug", "osm_type", "osm_id", "name", "type_code", "operator", "city", "region", "country",
           "floor_area_m2", "lat", "lon", "outline", "tags", "status", "source_file", "imported_at")


def import_footprint() -> None:
    """Time and peak memory of importing the larger extract, in a child process on its own SQLite file."""
    script = ("import os,sys,time,resource; sys.path.insert(0, %r); os.environ['DJANGO_SETTINGS_MODULE']="
              "'config.settings.local'; import django; django.setup(); from django.core.management import "
              "call_command; call_command('migrate', verbosity=0); from warehouse_app.services.osm_import import "
              "osm_import; from pathlib import Path; t=time.perf_counter(); s=osm_import(path=Path(%r), "
              "progress=lambda *_: None); print(f'{time.perf_counter()-t:.2f} {s.kept} '"
              "f'{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss/1024:.0f}')") % (
        str(ROOT), str(DATA / "liechtenstein-autauga.osm.pbf"))
    env = {**os.environ, "DATA_DIR": tempfile.mkdtemp(prefix="bench-import-"), "DJANGO_DEBUG": "false"}
    for name in ("DATABASE_URL", "DJANGO_SETTINGS_MODULE"):
        env.pop(name, None)
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True,
                         timeout=300)
    seconds, kept, peak = out.stdout.split()[-3:]
    print(f"import liechtenstein-autauga.osm.pbf: {seconds} s, {kept} kept, peak RSS {peak} MiB (whole process)")


def _shifted(geometry: dict, d: float):
    def move(c):
        return [move(x) for x in c] if c and isinstance(c[0], list) else [round(c[0] + d, 7), round(c[1] + d, 7)]

    return {"type": geometry.get("type"), "coordinates": move(geometry.get("coordinates") or [])}


def synthetic_rows(real, n: int):
    """Tuples in COLUMNS order: copy k of every real facility, shifted by 0.01° × k."""
    from django.utils import timezone

    now, made, copy = timezone.now(), 0, 0
    while made < n:
        copy += 1
        d = 0.01 * copy
        for f in real:
            if made >= n:
                return
            yield (f"synthetic-{copy}-{f.slug}"[:120], f.osm_type, -(copy * 10**10 + f.osm_id), f.name, f.type_code,
                   f.operator, f.city, f.region, f.country, f.floor_area_m2, round(f.lat + d, 7),
                   round(f.lon + d, 7), _shifted(f.outline, d), f.tags, "active", SYNTHETIC, now)
            made += 1


def copy_rows(table: str, rows) -> None:
    """COPY into the table with its secondary indexes dropped, then rebuild them from their own definitions
    (as pg_restore does: one sorted build per index instead of a million insertions into each)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = %s AND indexname NOT IN "
                       "(SELECT conname FROM pg_constraint WHERE conrelid = %s::regclass)", [table, table])
        indexes = cursor.fetchall()
        for name, _ in indexes:
            cursor.execute(f'DROP INDEX "{name}"')
        with cursor.cursor.copy(f"COPY {table} ({', '.join(COLUMNS)}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row((*row[:12], json.dumps(row[12]), json.dumps(row[13]), *row[14:]))
        cursor.execute("SET maintenance_work_mem = '256MB'")
        for _, definition in indexes:
            cursor.execute(definition)
        cursor.execute("RESET maintenance_work_mem")


def build_scale_set(total: int) -> None:
    from django.core.management import call_command
    from django.db import connection

    from warehouse_app.models import Facility
    from warehouse_app.services.directory import facets_refresh, facilities_analyze

    t = time.perf_counter()
    for path in sorted(DATA.glob("*.osm.pbf")):
        call_command("import_osm", str(path), stdout=open(os.devnull, "w"))
    real = list(Facility.objects.order_by("pk"))
    rows = synthetic_rows(real, max(total - len(real), 0))
    if connection.vendor == "postgresql":
        copy_rows(Facility._meta.db_table, rows)
    else:
        batch = []
        for row in rows:
            batch.append(Facility(**dict(zip(COLUMNS, row))))
            if len(batch) == 5000:
                Facility.objects.bulk_create(batch)
                batch = []
        Facility.objects.bulk_create(batch)
    loaded = time.perf_counter()
    facets_refresh()  # what osm_import runs after writing rows
    facilities_analyze()
    synthetic = Facility.objects.filter(source_file=SYNTHETIC).count()
    print(f"scale set: {len(real) + synthetic} facilities ({synthetic} SYNTHETIC copies of {len(real)} real ones): "
          f"rows written in {loaded - t:.0f} s, facets + vacuum/analyze {time.perf_counter() - loaded:.0f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--facilities", type=int, default=1_000_000, help="size of the scale set (default 1,000,000)")
    bench_arguments(parser)
    args = parser.parse_args()
    with Bench("warehouse", args, celery=True) as bench:  # the worker draws the region maps after the import
        import_footprint()
        build_scale_set(args.facilities)
        bench.serve()
        bench.baselines()
        for path in [*SEARCHES, "/api/regions"]:
            body = json.load(urllib.request.urlopen(bench.url + path, timeout=30))
            label = path.removeprefix("/api/warehouses/search")
            if "count" in body:
                label += f" ({body['count']}{'~' if body.get('count_is_estimate') else ''})"
            bench.report(label, bench.wrk(path))
        bench.report("?type=industrial&min_area=<random> (uncached)", bench.wrk(script=UNCACHED_LUA))
        print("web workers after the API figures: " + ", ".join(bench.worker_memory()))
        for path in PAGES:
            bench.report(path, bench.wrk(path))
        asked = urllib.request.Request(bench.url + REGION_MAP["path"], headers=REGION_MAP["headers"])
        with urllib.request.urlopen(asked, timeout=30) as response:
            size = len(response.read())
        bench.report(f"{REGION_MAP['path']} (gzip, {size / 1024:.0f} KiB)", bench.wrk(script=lua_requests([REGION_MAP])))
        print("web workers after the load: " + ", ".join(bench.worker_memory()))


if __name__ == "__main__":
    main()
