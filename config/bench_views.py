"""Baselines for the benchmarks (bench/harness.py), routed under /bench/ only when BENCH_VIEWS is set.

Plain Django views behind the project's middleware, so a bench can print how far an endpoint is from the
cheapest answer the same server gives: `plain` touches no database, `db` does one indexed read and one insert,
`page` returns the bytes of the file BENCH_PAGE_FILE names (read once per process) as text/html.
They use Django's session table (keyed by its primary key), so no model exists for them.
"""
import os
import secrets
from datetime import timedelta

from django.contrib.sessions.models import Session
from django.http import HttpResponse, JsonResponse
from django.urls import path
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt


def plain(request):
    return JsonResponse({"ok": True})


@csrf_exempt
def db(request):
    """One read by primary key (usually a miss) and one insert, each its own statement in autocommit."""
    found = Session.objects.filter(session_key=request.GET.get("key") or "bench-read").exists()
    Session.objects.create(session_key=f"bench-{secrets.token_hex(16)}", session_data="",
                           expire_date=timezone.now() + timedelta(minutes=5))
    return JsonResponse({"ok": True, "found": found})


_PAGE: list[bytes] = []


def page(request):
    """The same bytes a deployed page has, from memory: what the edge serving that page is measured against."""
    if not _PAGE:
        with open(os.environ["BENCH_PAGE_FILE"], "rb") as f:
            _PAGE.append(f.read())
    return HttpResponse(_PAGE[0], content_type="text/html")


urlpatterns = [path("plain", plain), path("db", db), path("page", page)]
