"""Browser tests: Chromium (Playwright) against the production server, a real Celery worker, a builder node and a
scratch database.

How to add browser tests for your pages
---------------------------------------
- Put a `test_<area>.py` in this folder; mark it `pytestmark = pytest.mark.slow` (CI runs `pytest -m slow`).
- Use the package fixtures: `live_platform` (one server + worker for the whole run), `page` (one signed-out
  Chromium page; `new_page()` gives a fresh context, e.g. for a second user) and the helpers below.
- Create data through the services, not through the pages you are not testing: `live_platform.create_user()`
  (→ {"email", "password"}), `live_platform.script(code)` (runs in `manage.py shell`; its last printed line is
  JSON), `live_platform.manage("some_command", ...)`, or `with live_platform.orm(): ...` to use the ORM and
  services of the test process on the same database (not for passwords: the test settings hash them
  differently). `live_platform.sign_in(page, email, password)` signs a page in; `live_platform.restart_web()`
  restarts the server on the same port (open streams are cut).
- After each main page has rendered: `axe_check(page)` (fails on any serious or critical violation) and
  `screenshot(page, "<area>-<page>")`, saved as docs/screens/<name>.png.
- Keep it lean: one journey per area, reusing the package's server; no sleeps (Playwright's `expect` waits).
- A deployed site is served by the same server at `live_platform.site_url(slug)`, i.e.
  `http://<slug>.localhost:<port>/` (Chromium maps *.localhost to loopback).
Environment: on PostgreSQL when DATABASE_URL points at one (a scratch database is created and dropped), else a
SQLite file in a temporary DATA_DIR; the broker is REDIS_URL when set, else Celery's filesystem broker.
"""
import contextlib
import json
import os
import secrets
from pathlib import Path

import pytest

from tests.processes import ROOT, WebServer, child_env, django_script, free_port, manage, start_node, start_worker
from tests.platform_app.resources.dedicated_dbs_fixtures import dedicated_db_env
from tests.scratch_database import ScratchDatabase, default_database

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
# The add-on server of the add-ons journey: the machine's PostgreSQL (tests/browser/test_resources.py).
ADDONS_POSTGRES_URL = "postgres://postgres@127.0.0.1:5432/postgres"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--host-resolver-rules=MAP *.localhost 127.0.0.1"]
SCREENS = ROOT / "docs" / "screens"
PASSWORD = "browser-password-2026"


class LivePlatform:
    """The running platform: `url`, `port`, `env` (of its processes), and ways to act on its database."""

    def __init__(self, *, database: ScratchDatabase, env: dict, web: WebServer, worker, builder, blocker):
        self.database, self.env, self.web, self.worker, self._blocker = database, env, web, worker, blocker
        self.builder = builder
        self.url, self.port = web.url, web.port

    def manage(self, *args: str) -> str:
        return manage(self.env, *args)

    def script(self, code: str):
        return django_script(self.env, code)

    @contextlib.contextmanager
    def orm(self):
        """The ORM and services of the test process work on the platform's database inside the block.
        Playwright's sync API keeps an event loop running in this thread, so Django's guard against ORM calls
        from async code is lifted for the block (the calls are plain synchronous ones)."""
        saved = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
        os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
        try:
            with self._blocker.unblock(), default_database(self.database):
                yield
        finally:
            if saved is None:
                os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
            else:
                os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = saved

    def site_url(self, slug: str) -> str:
        return f"http://{slug}.localhost:{self.port}/"

    def create_user(self, *, email: str | None = None, password: str = PASSWORD, name: str = "Browser") -> dict:
        """A user made by the platform's own process (the test settings hash passwords differently)."""
        email = email or f"user-{secrets.token_hex(4)}@example.com"
        args = json.dumps({"email": email, "password": password, "name": name})
        self.script("import json\nfrom platform_app.models import User\n"
                    f"a = json.loads({args!r})\nUser.objects.create_user(**a)\nprint(json.dumps(a['email']))")
        return {"email": email, "password": password}

    def sign_in(self, page, email: str, password: str = PASSWORD) -> None:
        page.goto(self.url + "/dashboard/login/")
        page.get_by_label("Email").fill(email)
        page.get_by_label("Password").fill(password)
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_url(lambda url: "/dashboard/login/" not in url)

    def restart_web(self) -> None:
        """Stop the web server and start a new one on the same port (open streams are cut, as in a deploy)."""
        self.web.stop()
        self.web = WebServer(env=self.env, log_dir=self.web.log_path.parent, port=self.port).start()

    def logs(self) -> str:
        return "\n".join(f"--- {p.name} ---\n{p.log_tail(80)}" for p in (self.web, self.worker, self.builder) if p)


@pytest.fixture(scope="package")
def live_platform(tmp_path_factory, django_db_blocker):
    tmp = tmp_path_factory.mktemp("browser")
    tmp.chmod(0o711)  # the builder's sandboxes run as their own user, which walks down to the builder's folders
    data_dir = tmp / "data"
    data_dir.mkdir()
    database = ScratchDatabase(base_url=os.environ.get("DATABASE_URL"), data_dir=data_dir).create()
    port = free_port()
    env = child_env(data_dir=data_dir, database_url=database.url(), redis_url=os.environ.get("REDIS_URL") or None,
                    DEPLOY_DOMAIN="localhost", DEPLOY_SCHEME="http", DEPLOY_PORT=port, WEB_CONCURRENCY=1,
                    SITE_URL=f"http://127.0.0.1:{port}", ADDONS_POSTGRES_URL=ADDONS_POSTGRES_URL,
                    **dedicated_db_env())
    platform = worker = builder = None
    try:
        manage(env, "migrate", "--noinput")
        worker = start_worker(env=env, log_dir=tmp)
        web = WebServer(env=env, log_dir=tmp, port=port).start()
        # builds run on a builder node, sandboxed where bubblewrap works (unsandboxed, and saying so, elsewhere)
        builder = start_node(server=web.url, join=manage(env, "node_invite").strip(), data_dir=tmp / "builder",
                             log_dir=tmp, name="builder", build=2, run=False, SANDBOX_ALLOW_NONE="true")
        platform = LivePlatform(database=database, env=env, web=web, worker=worker, builder=builder,
                                blocker=django_db_blocker)
        yield platform
        print(platform.logs())  # shown when a test failed
    finally:
        for process in (builder, platform.web if platform else None, worker):
            if process is not None:
                process.stop()
        database.drop()


# Package scope, not session: Playwright's sync API keeps an event loop running in this thread while it is open,
# and Django refuses ORM calls from a thread with a running loop, so it must be closed before later tests run.
@pytest.fixture(scope="package")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield browser
        browser.close()


@pytest.fixture(scope="package")
def new_page(browser):
    """`new_page()`: a page in a fresh context (its own cookies), closed when the browser tests end."""
    contexts = []

    def make(**options):
        context = browser.new_context(viewport={"width": 1280, "height": 800}, **options)
        context.set_default_timeout(30_000)
        contexts.append(context)
        return context.new_page()

    yield make
    for context in contexts:
        context.close()


@pytest.fixture(scope="package")
def page(new_page):
    return new_page()


def axe_check(page, *, ignore: tuple = ()) -> None:
    """Run axe-core in the page; fail on any serious or critical violation (rule ids in `ignore` excepted)."""
    from axe_playwright_python.sync_playwright import Axe

    results = Axe().run(page)
    bad = [v for v in results.response["violations"]
           if v.get("impact") in ("serious", "critical") and v["id"] not in ignore]
    summary = [{"id": v["id"], "impact": v["impact"], "help": v["help"],
                "nodes": [n["target"] for n in v["nodes"]][:5]} for v in bad]
    assert not bad, f"accessibility violations on {page.url}:\n{json.dumps(summary, indent=1)}"


def screenshot(page, name: str) -> Path:
    """Save the whole page as docs/screens/<name>.png."""
    SCREENS.mkdir(parents=True, exist_ok=True)
    path = SCREENS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
