"""Directory search speed at scale, and the import's time and memory.

    .venv/bin/python bench/warehouse.py [N]

Builds a scale set of N facilities (default 100,000) in a temporary SQLite database (or DATABASE_URL):
the real facilities of both extracts, copied with shifted positions and marked SYNTHETIC in their
slugs and source file. Prints requests/s and p95 latency of typical searches and of /api/regions through
the full Django stack (in-process, no sockets), next to the same query run directly on the ORM.
"""
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DATA_DIR", tempfile.mkdtemp(prefix="bench-wh-"))
os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings.local"

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.test import Client  # noqa: E402

from warehouse_app.models import Facility  # noqa: E402
from warehouse_app.services import directory  # noqa: E402

DATA = ROOT / "warehouse_app" / "data" / "osm"
QUERIES = [
    "/api/warehouses/search?type=industrial",
    "/api/warehouses/search?region=Oberland&min_area=1000",
    "/api/warehouses/search?country=Liechtenstein&type=commercial&max_area=5000",
    "/api/warehouses/search?q=depot",
    "/api/regions",
]


def import_footprint() -> None:
    """Time and peak memory of importing the larger extract, in a child process."""
    script = ("import os,sys,time,resource; sys.path.insert(0, %r); os.environ['DJANGO_SETTINGS_MODULE']="
              "'config.settings.local'; import django; django.setup(); from django.core.management import "
              "call_command; call_command('migrate', verbosity=0); from warehouse_app.services.osm_import import "
              "osm_import; from pathlib import Path; t=time.perf_counter(); s=osm_import(path=Path(%r), "
              "progress=lambda *_: None); print(f'{time.perf_counter()-t:.2f} {s.kept} '"
              "f'{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss/1024:.0f}')") % (
        str(ROOT), str(DATA / "liechtenstein-autauga.osm.pbf"))
    env = {**os.environ, "DATA_DIR": tempfile.mkdtemp(prefix="bench-import-")}
    env.pop("DATABASE_URL", None)
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    seconds, kept, peak = out.stdout.split()[-3:]
    print(f"import liechtenstein-autauga.osm.pbf: {seconds} s, {kept} kept, peak RSS {peak} MiB (whole process)")


def build_scale_set(n: int) -> None:
    for path in sorted(DATA.glob("*.osm.pbf")):
        call_command("import_osm", str(path), verbosity=0, stdout=open(os.devnull, "w"))
    real = list(Facility.objects.all())
    rows, copy = [], 0
    while len(real) + len(rows) < n:
        copy += 1
        for f in real:
            if len(real) + len(rows) >= n:
                break
            shift = 0.01 * copy
            rows.append(Facility(slug=f"synthetic-{copy}-{f.slug}"[:120], osm_type=f.osm_type, osm_id=-(copy * 10**10 + f.osm_id),
                                 name=f.name, type_code=f.type_code, operator=f.operator, city=f.city, region=f.region,
                                 country=f.country, floor_area_m2=f.floor_area_m2, lat=f.lat + shift, lon=f.lon + shift,
                                 outline={}, tags={}, source_file="SYNTHETIC scale copy"))
    Facility.objects.bulk_create(rows, batch_size=5000)


def measure(label, fn, repeat):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    p95 = statistics.quantiles(times, n=20)[-1] * 1000
    print(f"  {label:<12} {repeat / sum(times):8.1f} req/s   p95 {p95:7.2f} ms")


def main(n: int, repeat: int = 40) -> None:
    call_command("migrate", verbosity=0)
    import_footprint()
    t = time.perf_counter()
    build_scale_set(n)
    print(f"scale set: {Facility.objects.count()} facilities ({Facility.objects.filter(source_file__startswith='SYNTHETIC').count()} "
          f"SYNTHETIC copies) built in {time.perf_counter() - t:.1f} s on "
          f"{settings.DATABASES['default']['ENGINE'].rsplit('.', 1)[-1]}")
    client = Client()
    for url in QUERIES:
        print(url)
        assert client.get(url).status_code == 200
        measure("HTTP", lambda: client.get(url), repeat)
        if url == "/api/regions":
            measure("ORM", lambda: list(directory.regions()), repeat)
        else:
            from django.http import QueryDict

            params = QueryDict(url.split("?", 1)[1])
            measure("ORM", lambda: (lambda qs: (qs.count(), list(qs[:20])))(directory.facilities_search(params)[0]), repeat)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000)
