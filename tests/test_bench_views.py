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


def test_page_baseline_returns_the_files_bytes(api, bench_routes, tmp_path, monkeypatch):
    page = tmp_path / "index.html"
    page.write_bytes(b"<h1>same bytes</h1>")
    monkeypatch.setenv("BENCH_PAGE_FILE", str(page))
    monkeypatch.setattr("config.bench_views._PAGE", [])
    resp = api.get("/bench/page")
    assert resp.status_code == 200 and resp.content == b"<h1>same bytes</h1>"
    assert resp["Content-Type"].startswith("text/html")
