"""The Tunnel tab in a real browser: the owner starts the tunnel, the page shows the command once, that very
command (run as a process) connects a local `http.server`, the page says connected, Chromium gets the file from
`<slug>-tunnel.localhost`, and Stop ends it (the client gives up). Axe-checked, captured as docs/screens/tunnel.png."""
import shlex

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import axe_check, screenshot
from tests.processes import PYTHON, Process, free_port, wait_until

pytestmark = pytest.mark.slow

SETUP = """
import json
from platform_app.models import User
from platform_app.services.projects.projects import project_create_from_image
from platform_app.services.teams.workspaces import workspace_create
user = User.objects.get(email=%r)
workspace = workspace_create(user=user, name="Laptops", slug="tunnel-browser")
project = project_create_from_image(workspace=workspace, actor=user, name="Laptop", image_ref="nginx:1.27",
                                    slug="laptop")
print(json.dumps(project.pk))
"""


def test_start_connect_serve_and_stop_from_the_tunnel_tab(live_platform, new_page, tmp_path):
    owner = live_platform.create_user()
    project = live_platform.script(SETUP % owner["email"])
    folder = tmp_path / "www"
    folder.mkdir()
    (folder / "file.txt").write_text("served from a laptop\n")
    site_port = free_port()
    processes = [Process("tunnel-site", [PYTHON, "-m", "http.server", site_port, "--bind", "127.0.0.1",
                                         "--directory", folder], env=live_platform.env, log_dir=tmp_path).start()]
    page = new_page()
    try:
        live_platform.sign_in(page, owner["email"], owner["password"])
        page.goto(live_platform.url + "/dashboard/tunnel-browser/projects/laptop/")
        page.get_by_role("navigation", name="Project").get_by_role("link", name="Tunnel").click()
        expect(page.get_by_role("heading", name="Tunnel stopped")).to_be_visible()
        expect(page.locator(".badge")).to_have_text("stopped")
        axe_check(page)

        page.get_by_label("Local port").fill(str(site_port))
        page.get_by_role("button", name="Start tunnel").click()
        expect(page.get_by_role("heading", name="Tunnel started")).to_be_visible()
        command = page.get_by_label("Command").inner_text().strip()
        assert f"--project {project} --port {site_port} --token svct_" in command
        argv = shlex.split(command)
        assert argv[:3] == ["python", "manage.py", "tunnel"]
        client = Process("tunnel-client", [PYTHON, *argv[1:]], env=live_platform.env, log_dir=tmp_path).start()
        processes.append(client)
        client.wait_for_log("Forwarding", timeout=60)

        def connected():
            page.goto(live_platform.url + "/dashboard/tunnel-browser/projects/laptop/tunnel/")
            return page.locator(".badge").inner_text() == "connected"

        wait_until(connected, timeout=30, what="the page to say connected", logs=[client])
        expect(page.get_by_text("Token:")).to_have_count(0)  # shown once
        axe_check(page)
        screenshot(page, "tunnel")

        site = new_page()
        answer = site.goto(f"http://laptop-tunnel.localhost:{live_platform.port}/file.txt")
        assert answer.status == 200 and "served from a laptop" in site.content()

        page.get_by_role("button", name="Stop tunnel").click()
        expect(page.get_by_text("Tunnel stopped: its token no longer works.")).to_be_visible()
        expect(page.locator(".badge")).to_have_text("stopped")
        assert site.goto(f"http://laptop-tunnel.localhost:{live_platform.port}/file.txt").status == 503
        wait_until(lambda: not client.alive, timeout=30, what="the client to give up", logs=[client])
        assert "The tunnel was stopped" in client.log_text()
    finally:
        for process in processes:
            process.stop()
    assert live_platform.script("import json\nfrom platform_app.models import TunnelConnection\n"
                                "print(json.dumps(TunnelConnection.objects.count()))") == 0
