"""Preview protection on the preview's own host: the password page posts to /.well-known/svc-preview there, which
sets the cookie on that host and goes back (same-origin posts only, attempts limited); the cookie is bound to the
password's version, so changing or removing the password voids it."""
from types import SimpleNamespace

import pytest

from platform_app.services.edge.preview import PREVIEW_PATH
from tests.platform_app.domains.factories import ready_deployment
from tests.platform_app.projects.factories import ProjectFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def preview(workspace, settings, tmp_path, alice_client):
    """A password-protected preview deployment of `blog`: `host`, `origin` and `project`."""
    settings.ARTIFACT_ROOT = tmp_path / "artifacts"
    project = ProjectFactory(workspace=workspace, name="Blog", slug="blog")
    deployment = ready_deployment(project, {"index.html": "<h1>draft</h1>", "docs/index.html": "<p>docs</p>"},
                                  branch="draft", production=False)
    set_password(alice_client, project, "first-pass-1")
    host = f"blog-{deployment.pk[4:12]}.localhost"
    return SimpleNamespace(host=host, project=project, origin=f"http://{host}")


def set_password(client, project, password=None, mode="password"):
    body = {"mode": mode, **({"password": password} if password else {})}
    resp = client.put(f"/v1/orgs/acme/projects/{project.pk}/preview-protection", body, format="json")
    assert resp.status_code == 200, resp.json()


def enter(client, preview, password, *, next_path="/", **headers):
    headers.setdefault("HTTP_ORIGIN", preview.origin)
    return client.post(PREVIEW_PATH, {"password": password, "next": next_path}, HTTP_HOST=preview.host,
                       REMOTE_ADDR="203.0.113.7", **headers)


def test_the_password_form_works_on_the_preview_host(preview, client):
    gate = client.get("/docs/", HTTP_HOST=preview.host)
    html = gate.content.decode()
    assert gate.status_code == 401 and f"action='{PREVIEW_PATH}'" in html
    assert "name=next value='/docs/'" in html and "type=password" in html
    form = client.get(f"{PREVIEW_PATH}?next=/docs/", HTTP_HOST=preview.host)
    assert form.status_code == 200 and "name=next value='/docs/'" in form.content.decode()

    wrong = enter(client, preview, "nope-nope-nope", next_path="/docs/")
    assert wrong.status_code == 401 and "Wrong password." in wrong.content.decode()
    assert f"svc_preview_{preview.project.pk}" not in wrong.cookies

    right = enter(client, preview, "first-pass-1", next_path="/docs/")
    assert right.status_code == 303 and right["Location"] == "/docs/"
    cookie = right.cookies[f"svc_preview_{preview.project.pk}"]
    assert cookie["httponly"] and cookie["samesite"] == "Lax" and cookie["path"] == "/"
    assert not cookie["domain"]  # host-only: the preview host the visitor is on
    page = client.get("/docs/", HTTP_HOST=preview.host)
    assert page.status_code == 200 and page.content == b"<p>docs</p>"
    # already allowed: the form's GET goes straight back
    assert client.get(f"{PREVIEW_PATH}?next=/", HTTP_HOST=preview.host)["Location"] == "/"


@pytest.mark.parametrize("next_path", ["//evil.example/", "https://evil.example/", "/\\evil.example", "javascript:x"])
def test_it_only_goes_back_to_this_host(preview, client, next_path):
    resp = enter(client, preview, "first-pass-1", next_path=next_path)
    assert resp.status_code == 303 and resp["Location"] == "/"


@pytest.mark.parametrize("headers", [{"HTTP_ORIGIN": "https://evil.example"}, {"HTTP_ORIGIN": "null"},
                                     {"HTTP_ORIGIN": "", "HTTP_REFERER": "https://evil.example/page"},
                                     {"HTTP_ORIGIN": ""},
                                     {"HTTP_SEC_FETCH_SITE": "cross-site"}])
def test_cross_site_posts_are_refused(preview, client, headers):
    resp = enter(client, preview, "first-pass-1", **headers)
    assert resp.status_code == 403 and not resp.cookies
    assert client.get("/", HTTP_HOST=preview.host).status_code == 401


def test_a_same_origin_referer_is_enough_without_origin(preview, client):
    resp = enter(client, preview, "first-pass-1", HTTP_ORIGIN="", HTTP_REFERER=f"{preview.origin}/docs/")
    assert resp.status_code == 303


def test_attempts_are_limited_like_the_verify_route(preview, client, settings):
    settings.PREVIEW_ATTEMPTS_PER_WINDOW = 2
    assert enter(client, preview, "wrong-one-1").status_code == 401
    assert enter(client, preview, "wrong-two-2").status_code == 401
    limited = enter(client, preview, "first-pass-1")
    assert limited.status_code == 429 and int(limited["Retry-After"]) > 0 and not limited.cookies
    # the API's verify counts the same attempts
    api = client.post(f"/v1/preview-protection/{preview.project.pk}/verify", {"password": "first-pass-1"},
                      content_type="application/json", REMOTE_ADDR="203.0.113.7")
    assert api.status_code == 429


def test_other_methods_and_production_hosts(preview, client, settings):
    assert client.put(PREVIEW_PATH, HTTP_HOST=preview.host).status_code == 405
    production = ProjectFactory(workspace=preview.project.workspace, slug="prod")
    ready_deployment(production, {"index.html": "<h1>prod</h1>"})
    # a production host serves its own files there: nothing is reserved
    assert client.get(PREVIEW_PATH, HTTP_HOST="prod.localhost").status_code == 404


def test_a_new_password_voids_the_cookies_of_the_old_one(preview, client, alice_client):
    assert enter(client, preview, "first-pass-1").status_code == 303
    assert client.get("/", HTTP_HOST=preview.host).status_code == 200
    set_password(alice_client, preview.project, "second-pass-2")
    assert client.get("/", HTTP_HOST=preview.host).status_code == 401  # the same cookie, an older version
    check = client.get(f"/v1/preview-protection/{preview.project.pk}/check").json()
    assert check["allowed"] is False and check["reason"] == "password required"
    assert enter(client, preview, "second-pass-2").status_code == 303
    assert client.get("/", HTTP_HOST=preview.host).status_code == 200


def test_removing_the_password_voids_the_cookies_too(preview, client, alice_client):
    assert enter(client, preview, "first-pass-1").status_code == 303
    set_password(alice_client, preview.project, mode="off")
    assert client.get("/", HTTP_HOST=preview.host).status_code == 200  # not protected now
    set_password(alice_client, preview.project)  # password mode again, with the stored password
    assert client.get("/", HTTP_HOST=preview.host).status_code == 401
    assert enter(client, preview, "first-pass-1").status_code == 303
    assert client.get("/", HTTP_HOST=preview.host).status_code == 200


def test_an_api_cookie_from_before_the_change_is_void(preview, client, alice_client):
    verified = client.post(f"/v1/preview-protection/{preview.project.pk}/verify", {"password": "first-pass-1"},
                           content_type="application/json")
    assert verified.status_code == 201
    assert client.get(f"/v1/preview-protection/{preview.project.pk}/check").json()["allowed"] is True
    set_password(alice_client, preview.project, "second-pass-2")
    assert client.get(f"/v1/preview-protection/{preview.project.pk}/check").json()["allowed"] is False
