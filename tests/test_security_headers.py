"""Security headers: pages and the API docs carry a Content-Security-Policy they pass, frame denial, nosniff and a
referrer policy; API JSON a policy that renders nothing; the edge's responses for user deployments keep their own.
Production settings keep the deploy domain in ALLOWED_HOSTS and pass `check --deploy`."""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.test import Client

from platform_app.models import Deployment
from tests.conftest import hosted_repo
from tests.factories import PASSWORD
from tests.platform_app.deployments.test_builds import trigger
from tests.platform_app.projects.factories import ProjectFactory

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[1]


def policy(resp) -> dict:
    return {d.split()[0]: d.split()[1:] for d in resp["Content-Security-Policy"].split(";") if d.strip()}


def assert_page_headers(resp):
    csp = policy(resp)
    assert csp["script-src"] == ["'self'"] and csp["default-src"] == ["'self'"]
    assert csp["frame-ancestors"] == ["'none'"] and csp["object-src"] == ["'none'"]
    assert resp["X-Frame-Options"] == "DENY"
    assert resp["X-Content-Type-Options"] == "nosniff"
    assert resp["Referrer-Policy"] == "strict-origin-when-cross-origin"
    assert resp["Cross-Origin-Opener-Policy"] == "same-origin"


def test_dashboard_and_directory_pages_carry_the_headers(alice, workspace):
    client = Client()
    assert_page_headers(client.get("/dashboard/login/"))
    assert client.post("/dashboard/login/", {"email": alice.email, "password": PASSWORD}).status_code == 302
    for path in ("/dashboard/", "/dashboard/acme/", "/dashboard/otp/acme/", "/warehouses/", "/"):
        resp = client.get(path)
        assert resp.status_code == 200, path
        assert_page_headers(resp)
    assert_page_headers(client.get("/no-such-page/"))  # error pages too


def test_api_json_gets_a_policy_that_renders_nothing(api, alice_client):
    for resp in (api.get("/health"), alice_client.get("/v1/auth/me"), api.get("/api/v1/no-such-route"),
                 api.get("/api/warehouses")):
        assert resp["Content-Type"].startswith("application/json")
        assert resp["Content-Security-Policy"] == "default-src 'none'; frame-ancestors 'none'"
        assert resp["X-Content-Type-Options"] == "nosniff" and resp["X-Frame-Options"] == "DENY"


def inline_scripts(html: str) -> list[str]:
    """`<script>` elements without `src`, event-handler attributes and `javascript:` links: what the policy blocks."""
    found = [m.group(0) for m in re.finditer(r"<script\b(?![^>]*\bsrc=)[^>]*>", html, re.I)]
    found += re.findall(r"\son[a-z]+\s*=", html, re.I) + re.findall(r"javascript:", html, re.I)
    return found


@pytest.mark.parametrize("prefix", ["/v1/", "/api/v1/", "/api/"])
def test_api_docs_run_without_inline_script(api, prefix):
    for page in ("docs", "redoc"):
        resp = api.get(prefix + page)
        assert resp.status_code == 200 and resp["Content-Type"].startswith("text/html")
        assert_page_headers(resp)
        html = resp.content.decode()
        assert inline_scripts(html) == [], page
        for src in re.findall(r'<script[^>]*\bsrc="([^"]+)"', html):
            assert src.startswith("/"), src  # this site only: no CDN
    init = api.get(prefix + "docs?script=")
    assert init.status_code == 200 and init["Content-Type"].startswith("application/javascript")
    assert b"SwaggerUIBundle(" in init.content


def test_no_template_needs_inline_script():
    folders = [ROOT / "templates", *ROOT.glob("*_app/templates")]
    templates = [p for folder in folders for p in folder.rglob("*.html")]
    assert templates
    for path in templates:
        assert inline_scripts(path.read_text()) == [], path


@pytest.fixture
def site(workspace, settings, tmp_path):
    settings.ARTIFACT_ROOT, settings.BUILD_ROOT = tmp_path / "artifacts", tmp_path / "builds"
    repo = hosted_repo(workspace, "site", {"index.html": "<h1>Hi</h1><script>document.title='inline'</script>"})
    return ProjectFactory(workspace=workspace, name="Site", slug="site", git_url=repo)


def test_edge_responses_keep_the_deployment_own_headers(alice_client, site, django_capture_on_commit_callbacks):
    assert trigger(alice_client, site, django_capture_on_commit_callbacks).status_code == 201
    assert Deployment.objects.get().status == "ready"
    for path, status in (("/", 200), ("/missing", 404)):
        resp = Client().get(path, HTTP_HOST="site.localhost")
        assert resp.status_code == status
        for header in ("Content-Security-Policy", "X-Frame-Options", "Cross-Origin-Opener-Policy"):
            assert header not in resp, header  # a user's site may run inline script and be framed
        # Django's baseline, only where a deployment sets none: the browsers' own default referrer policy
        assert resp.get("Referrer-Policy", "strict-origin-when-cross-origin") == "strict-origin-when-cross-origin"
    assert Client().get("/", HTTP_HOST="site.localhost").content.startswith(b"<h1>Hi</h1><script>")


def test_a_view_setting_its_own_policy_keeps_it(rf):
    from django.http import HttpResponse

    from config.security import SecurityHeadersMiddleware

    own = "default-src 'self'; script-src 'self' 'sha256-abc'"
    response = HttpResponse("<p>x</p>", headers={"Content-Security-Policy": own})
    assert SecurityHeadersMiddleware(lambda request: response)(rf.get("/"))["Content-Security-Policy"] == own


def production_env(tmp_path, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DEPLOY_"))}
    env.update(DJANGO_SETTINGS_MODULE="config.settings.production", DJANGO_SECRET_KEY="p" * 30 + "-Kx9#2mQ" * 4,
               DJANGO_ALLOWED_HOSTS="example.com", DATA_DIR=str(tmp_path / "data"), **extra)
    return env


def test_production_keeps_the_deploy_domain_and_passes_the_deploy_check(tmp_path):
    code = ("import json, django; django.setup(); from django.conf import settings as s; "
            "print(json.dumps({'hosts': s.ALLOWED_HOSTS, 'middleware': s.MIDDLEWARE, 'debug': s.DEBUG}))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True,
                         env=production_env(tmp_path, DEPLOY_DOMAIN="apps.example.net"))
    loaded = json.loads(out.stdout.strip().splitlines()[-1])
    assert loaded["hosts"] == ["example.com", ".apps.example.net"] and loaded["debug"] is False
    order = {name.rsplit(".", 1)[-1]: i for i, name in enumerate(loaded["middleware"])}
    assert order["RequestGuardMiddleware"] < order["EdgeMiddleware"] < order["SecurityHeadersMiddleware"]
    check = subprocess.run([sys.executable, "manage.py", "check", "--deploy", "--tag", "security", "--fail-level",
                            "WARNING"], cwd=ROOT, capture_output=True, text=True, env=production_env(tmp_path))
    assert check.returncode == 0, check.stdout + check.stderr

