"""Fixtures of the image tests: a registry (registry.py) anonymous or behind htpasswd, for the whole session.
Skipped without bwrap, docker-registry or skopeo; failed instead under REQUIRE_SANDBOX."""
import os
import shutil
from pathlib import Path

import pytest

from tests.platform_app.images.registry import registry_start

TOOLS = {"bwrap": "bubblewrap", "docker-registry": "docker-registry", "skopeo": "skopeo", "htpasswd": "apache2-utils"}


def _need_tools():
    from platform_app.sandbox.runners import bubblewrap_problem

    missing = [f"{tool} ({package})" for tool, package in TOOLS.items() if shutil.which(tool) is None]
    missing += [] if missing or not bubblewrap_problem() else [bubblewrap_problem()]
    if not Path("/bin/busybox").is_file():
        missing.append("/bin/busybox (busybox-static)")
    if missing:
        if os.environ.get("REQUIRE_SANDBOX"):
            pytest.fail(f"Image tests must run here (REQUIRE_SANDBOX is set); missing: {', '.join(missing)}")
        pytest.skip(f"needs {', '.join(missing)}")


@pytest.fixture(scope="session")
def registry(tmp_path_factory):
    """An anonymous registry on loopback (plain HTTP)."""
    _need_tools()
    server = registry_start(tmp_path_factory.mktemp("registry"))
    yield server
    server.process.kill()
    server.process.wait()


@pytest.fixture(scope="session")
def private_registry(tmp_path_factory):
    """A registry behind htpasswd (bcrypt): user `deployer`, password `s3cret-pass`."""
    _need_tools()
    server = registry_start(tmp_path_factory.mktemp("private-registry"), htpasswd=("deployer", "s3cret-pass"))
    yield server
    server.process.kill()
    server.process.wait()
