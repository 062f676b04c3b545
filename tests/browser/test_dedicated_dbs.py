"""Dedicated databases in Chromium against the production server and a real worker on the test PostgreSQL
server: create a database (its psql URL shown once), watch it become ready, back it up, restore the backup,
branch it and delete both (the worker then drops them from the server); the page passes axe and is captured in
docs/screens/."""
import re

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import axe_check, screenshot
from tests.processes import wait_until
from tests.platform_app.resources.dedicated_dbs_fixtures import Cluster, dedicated_db_env, require_cluster

pytestmark = pytest.mark.slow

WORK_TIMEOUT = 60_000  # ms: provisioning, pg_dump and pg_restore on a busy 2-core machine

SETUP = """
import json
from platform_app.models import Membership, Project, User, Workspace
workspace = Workspace.objects.create(name="Data", slug="data-browser")
Membership.objects.create(workspace=workspace, user=User.objects.get(email=%r), role="owner")
Project.objects.create(workspace=workspace, name="Store", slug="store")
print(json.dumps(True))
"""


@pytest.fixture
def server():
    require_cluster()
    env = dedicated_db_env()
    server = Cluster(env["DEDICATED_DB_POSTGRES_URL"], env["DEDICATED_DB_NAME_PREFIX"])
    yield server
    server.drop_all()


def test_create_back_up_restore_branch_delete(live_platform, new_page, server):
    owner = live_platform.create_user()
    live_platform.script(SETUP % owner["email"])
    page = new_page()
    live_platform.sign_in(page, owner["email"], owner["password"])
    page.goto(live_platform.url + "/dashboard/data-browser/projects/store/databases/")
    expect(page.get_by_text("No databases yet.")).to_be_visible()

    page.get_by_label("Name").fill("main")
    page.get_by_role("button", name="Create database").click()
    expect(page.locator("#database-url")).to_contain_text("postgres://")
    expect(page.locator("#status-main")).to_have_text("ready", timeout=WORK_TIMEOUT)  # the list refreshes itself
    axe_check(page)

    page.get_by_role("button", name="Back up main now").click()
    expect(page.get_by_role("status").first).to_contain_text("Backup started.")
    backups = page.get_by_role("table", name="Latest backups of main")
    expect(backups).to_contain_text("done", timeout=WORK_TIMEOUT)
    expect(page.locator("#database-url")).to_have_count(0)  # the password was shown once
    screenshot(page, "resources-databases")

    backups.get_by_role("button", name=re.compile("Restore the backup of")).click()
    expect(page.get_by_role("status").first).to_contain_text("Restore started")
    expect(page.locator("#status-main")).to_have_text("ready", timeout=WORK_TIMEOUT)

    page.get_by_label("Branch name").fill("feature")
    page.get_by_role("button", name="Branch main").click()
    expect(page.get_by_role("heading", name="Database feature created")).to_be_visible()
    expect(page.locator("#status-feature")).to_have_text("ready", timeout=WORK_TIMEOUT)
    expect(page.get_by_text("branch of main")).to_be_visible()
    axe_check(page)

    for name in ("feature", "main"):
        page.get_by_role("button", name=f"Delete {name}").click()
        expect(page.get_by_role("status").first).to_contain_text("Database deleted.")
    expect(page.get_by_text("No databases yet.")).to_be_visible()
    wait_until(lambda: not server.databases() and not server.roles(), timeout=30,
               what="the worker dropping the deleted databases and roles", logs=[live_platform.worker])
