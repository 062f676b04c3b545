"""The Buckets tab in Chromium, against a server configured with an S3-compatible endpoint (moto's server mode in
this process): create a bucket → its credentials are shown once → it is listed, and a reload shows no secret. The
page passes axe and is captured in docs/screens/."""
import socket

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import axe_check, screenshot
from tests.processes import WebServer

pytestmark = pytest.mark.slow

SETUP = """
import json
from platform_app.models import Membership, Project, User, Workspace
workspace = Workspace.objects.create(name="Storage", slug="storage-browser")
Membership.objects.create(workspace=workspace, user=User.objects.get(email=%r), role="owner")
Project.objects.create(workspace=workspace, name="Media", slug="media-browser", git_url="https://git.example.com/m.git")
print(json.dumps(True))
"""


@pytest.fixture
def s3_endpoint():
    from moto.server import ThreadedMotoServer

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    yield f"http://127.0.0.1:{port}"
    server.stop()


@pytest.fixture
def storage_web(live_platform, s3_endpoint, tmp_path):
    """The platform's web server again, on its own port, with the object storage settings."""
    env = {**live_platform.env, "BUCKETS_S3_ENDPOINT": s3_endpoint, "BUCKETS_S3_REGION": "us-east-1",
           "BUCKETS_S3_ACCESS_KEY_ID": "admin-key", "BUCKETS_S3_SECRET_ACCESS_KEY": "admin-secret"}
    web = WebServer(env=env, log_dir=tmp_path, name="web-buckets").start()
    yield web
    web.stop()


def test_create_a_bucket_and_see_its_credentials_once(live_platform, storage_web, new_page):
    owner = live_platform.create_user()
    live_platform.script(SETUP % owner["email"])
    page = new_page()
    page.goto(storage_web.url + "/dashboard/login/")
    page.get_by_label("Email").fill(owner["email"])
    page.get_by_label("Password").fill(owner["password"])
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(lambda url: "/dashboard/login/" not in url)

    page.goto(storage_web.url + "/dashboard/storage-browser/projects/media-browser/")
    page.get_by_role("link", name="Buckets").click()
    expect(page.get_by_text("No buckets yet.")).to_be_visible()
    page.get_by_label("Bucket name").fill("uploads")
    page.get_by_role("button", name="Create bucket").click()
    expect(page.get_by_role("heading", name="Credentials of media-browser-uploads")).to_be_visible()
    secret = page.locator("#bucket-secret-access-key").inner_text()
    assert len(secret) >= 20
    expect(page.get_by_role("cell", name="media-browser-uploads", exact=True)).to_be_visible()
    axe_check(page)
    screenshot(page, "buckets")

    page.goto(page.url)  # the tab again, by GET
    expect(page.get_by_role("cell", name="media-browser-uploads", exact=True)).to_be_visible()
    expect(page.locator("#bucket-secret-access-key")).to_have_count(0)
    assert secret not in page.content()
