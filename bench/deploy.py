"""Deployment figures, measured in one run on this machine.

    .venv/bin/python bench/deploy.py [LINES]

1. trigger → ready for the static-site template (clone, detect, build, artifact), five times;
2. latency from a log line written to its arrival on the SSE stream, p50/p95 over LINES lines (Redis pub/sub when
   REDIS_URL is set, polling otherwise);
3. edge requests/s for a small page next to a plain Django view returning the same file.
Everything runs in-process on a fresh SQLite database (or DATABASE_URL), builds eagerly.
"""
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DATA_DIR", tempfile.mkdtemp(prefix="bench-deploy-"))
os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings.local"
os.environ["CELERY_TASK_ALWAYS_EAGER"] = "true"

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.http import FileResponse  # noqa: E402
from django.test import Client  # noqa: E402
from django.urls import include, path  # noqa: E402

from platform_app.models import Deployment, User, Workspace  # noqa: E402

PAGE = {}


def plain(request):
    return FileResponse(open(PAGE["file"], "rb"), content_type="text/html")


urlpatterns = [path("plain", plain), path("", include("config.urls"))]


def main(lines: int) -> None:
    from platform_app.services.deployments.log_stream import log_stream_open
    from platform_app.services.deployments.deployments import deployment_trigger, log_append
    from platform_app.services.projects.projects import project_create_from_template

    settings.ROOT_URLCONF = __name__
    call_command("migrate", verbosity=0)
    user = User.objects.create_user(email="bench@example.com", password="bench-password-1")
    workspace = Workspace.objects.create(name="Bench", slug="bench")
    project = project_create_from_template(workspace=workspace, actor=user, name="site", template="static-site")
    print(f"database: {connection.vendor}; builds eager in-process; log follow: "
          f"{'Redis pub/sub' if settings.REDIS_URL else 'polling'}")

    times = []
    for _ in range(5):
        start = time.perf_counter()
        deployment_trigger(project=project, env="production", branch=None, trigger="api")
        times.append(time.perf_counter() - start)
        assert Deployment.objects.latest("created_at").status == "ready"
    print(f"trigger → ready (static-site): mean {statistics.mean(times) * 1000:.0f} ms, "
          f"min {min(times) * 1000:.0f} ms, max {max(times) * 1000:.0f} ms over {len(times)} builds")

    deployment = Deployment.objects.create(project=project, env="preview", branch="main", status="building")
    sent = {}

    def writer():
        for i in range(lines):
            sent[i] = time.perf_counter()
            log_append(deployment, f"line {i}")
            time.sleep(0.005)
        Deployment.objects.filter(pk=deployment.pk).update(status="ready")
        connection.close()

    latencies = []
    thread = threading.Thread(target=writer)
    thread.start()
    for raw in log_stream_open(deployment_id=deployment.pk, asynchronous=False, poll=0.05):
        chunk = raw.decode()
        if chunk.startswith("id:"):
            index = int(chunk.split("data: line ", 1)[1])
            latencies.append(time.perf_counter() - sent[index])
    thread.join()
    q = statistics.quantiles(latencies, n=20)
    print(f"log line → SSE stream: p50 {statistics.median(latencies) * 1000:.1f} ms, p95 {q[-1] * 1000:.1f} ms "
          f"over {len(latencies)} lines")

    live = Deployment.objects.filter(project=project, status="ready", env="production").latest("ready_at")
    PAGE["file"] = settings.ARTIFACT_ROOT / live.artifact_path / "index.html"
    client = Client()
    n = 2000
    for label, call in (("edge (http://site.localhost/)", lambda: client.get("/", HTTP_HOST="site.localhost")),
                        ("plain Django view, same file", lambda: client.get("/plain"))):
        assert call().status_code == 200
        start = time.perf_counter()
        for _ in range(n):
            call()
        rate = n / (time.perf_counter() - start)
        PAGE[label] = rate
        print(f"{label:<32} {rate:8.0f} req/s")
    print(f"edge / plain view = {PAGE['edge (http://site.localhost/)'] / PAGE['plain Django view, same file']:.2f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200)
