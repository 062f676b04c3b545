"""The benchmarks' baseline views (config/bench_views.py) are routed only when BENCH_VIEWS is set."""
import importlib

import pytest
from django.contrib.sessions.models import Session
from django.test import override_settings
from django.urls import clear_url_caches

pytestmark = pytest.mark.django_db


@pytest.fixture
def bench_routes():
    import config.urls

    with override_settings(BENCH_VIEWS=True):
        importlib.reload(config.urls)
        clear_url_caches()
        yield
    importlib.reload(config.urls)
    clear_url_caches()


def test_no_baseline_routes_by_default(api, settings):
    assert settings.BENCH_VIEWS is False
    assert api.get("/bench/plain").status_code == 404 and api.get("/bench/db").status_code == 404


def test_baselines_answer_when_enabled(api, bench_routes):
    assert api.get("/bench/plain").json() == {"ok": True}
    before = Session.objects.count()
    assert api.get("/bench/db").json() == {"ok": True, "found": False}
    assert Session.objects.count() == before + 1 and Session.objects.filter(session_key__startswith="bench-").exists()
