"""OTP send and verify throughput next to a baseline, measured in the same run.

    .venv/bin/python bench/otp.py [N]

Requests go through Django's full stack in-process (middleware, URL routing, DRF, the database;
no sockets), on a fresh SQLite database in a temporary data folder (or DATABASE_URL). Delivery
tasks run eagerly in the request, as the sandbox channel. The baseline is a minimal Django JSON
view doing one indexed read and one write, so the ratio shows what the OTP rules cost on top.
"""
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DATA_DIR", tempfile.mkdtemp(prefix="bench-otp-"))
os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings.local"
os.environ["CELERY_TASK_ALWAYS_EAGER"] = "true"
os.environ.setdefault("OTP_SENDS_PER_RECIPIENT", "1000000")
os.environ.setdefault("OTP_SENDS_PER_KEY_PER_MINUTE", "1000000")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.http import JsonResponse  # noqa: E402
from django.test import Client  # noqa: E402
from django.urls import include, path  # noqa: E402

from otp_app.models import SandboxMessage  # noqa: E402
from otp_app.services.keys import otp_key_create  # noqa: E402
from platform_app.models import AuditEvent, Workspace  # noqa: E402
from platform_app.services.keys import sha256_hex  # noqa: E402
from otp_app.models import ApiKey  # noqa: E402


def baseline(request):
    """One indexed read (the key by its hash) and one write, as JSON."""
    key = ApiKey.objects.get(key_hash=sha256_hex(request.headers["Authorization"][7:]))
    event = AuditEvent.objects.create(workspace_id=key.workspace_id, action="bench.baseline")
    return JsonResponse({"id": event.pk}, status=201)


urlpatterns = [path("baseline", baseline), path("", include("config.urls"))]


def rate(label, n, fn):
    start = time.perf_counter()
    for i in range(n):
        fn(i)
    elapsed = time.perf_counter() - start
    print(f"{label:<34} {n / elapsed:9.1f} req/s   ({n} requests, {elapsed:.2f} s)")
    return n / elapsed


def main(n: int) -> None:
    settings.ROOT_URLCONF = __name__
    settings.DEBUG = False
    call_command("migrate", verbosity=0)
    workspace = Workspace.objects.create(name="Bench", slug="bench")
    _, raw = otp_key_create(workspace=workspace, mode="test", name="bench")
    client = Client(HTTP_AUTHORIZATION=f"Bearer {raw}")
    print(f"database: {settings.DATABASES['default']['ENGINE'].rsplit('.', 1)[-1]}, N={n}")

    def post_baseline(i):
        assert client.post("/baseline").status_code == 201

    ids = []

    def send(i):
        resp = client.post("/api/v1/otp/send", {"recipient": f"+1415555{i % 10000:04d}", "locale": "en",
                                                "channel": "sms"}, content_type="application/json")
        assert resp.status_code == 201, resp.content
        ids.append(resp.json()["id"])

    codes = {}

    def verify(i):
        resp = client.post("/api/v1/otp/verify", {"id": ids[i], "code": codes[ids[i]]},
                           content_type="application/json")
        assert resp.json()["verified"] is True

    base = rate("baseline (1 read + 1 write)", n, post_baseline)
    sends = rate("POST /api/v1/otp/send", n, send)
    codes.update(SandboxMessage.objects.filter(record_id__in=ids).values_list("record_id", "code"))
    verifies = rate("POST /api/v1/otp/verify", n, verify)
    print(f"send / baseline   = {sends / base:.2f}")
    print(f"verify / baseline = {verifies / base:.2f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 300)
