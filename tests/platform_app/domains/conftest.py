"""Fixtures of the domains area: a project with a ready deployment on disk, and a DNS server the checks ask."""
import pytest

from tests.platform_app.domains.dns_zone import DnsZone
from tests.platform_app.domains.factories import ready_deployment
from tests.platform_app.projects.factories import ProjectFactory


@pytest.fixture
def zone(settings):
    """The resolver every check asks (OUTBOUND_DNS_SERVERS), with the platform's targets set."""
    settings.DOMAINS_CNAME_TARGET = "cname.localhost"
    settings.DOMAINS_A_RECORDS = ["203.0.113.10"]
    settings.DOMAINS_AAAA_RECORDS = ["2001:db8::10"]
    server = DnsZone().start()
    settings.OUTBOUND_DNS_SERVERS = [server.address]
    yield server
    server.stop()


@pytest.fixture
def project(workspace, settings, tmp_path):
    settings.ARTIFACT_ROOT = tmp_path / "artifacts"
    project = ProjectFactory(workspace=workspace, name="Shop", slug="shop")
    ready_deployment(project, {"index.html": "<h1>shop</h1>", "about.html": "<p>about</p>"})
    return project


@pytest.fixture
def url(project):
    return f"/v1/orgs/acme/projects/{project.pk}/domains"
