"""The edge's in-process caches: no query per request once a host is known, and every change that moves what a
host serves (rollback, a new production deployment, a rule) reaches the next request, here and in other
processes (the shared version key)."""
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from platform_app.models import Deployment
from config.local_cache import MISSING, LocalCache
from platform_app.services.edge.hostcache import edge_hosts_invalidate, hosts
from tests.platform_app.deployments.factories import DeploymentFactory

pytestmark = pytest.mark.django_db


def test_a_known_host_is_served_without_queries(site, edge):
    assert edge("/").status_code == 200
    with CaptureQueriesContext(connection) as queries:
        second = edge("/")
    assert second.status_code == 200 and second["X-Edge-Cache"] == "HIT"
    assert len(queries) == 0, [q["sql"] for q in queries]


def test_a_project_host_is_found_by_one_query_and_its_switches_come_with_it(site, edge, settings):
    """A miss (a host not seen yet, or dropped) is one query: the project, its production deployment, and whether a
    web component, firewall rules or analytics need more. With rules and analytics on, their own reads follow."""
    from platform_app.services.edge.analytics import analytics_set
    from platform_app.services.edge.firewall import firewall_rule_create

    hosts.clear()
    with CaptureQueriesContext(connection) as queries:
        assert edge("/").status_code == 200
    assert len([q for q in queries if q["sql"].startswith("SELECT")]) == 1, [q["sql"] for q in queries]
    firewall_rule_create(project=site, name="bots", action="deny",
                         conditions=[{"field": "user_agent", "op": "contains", "value": "evilbot"}])
    analytics_set(project=site, enabled=True)
    assert edge("/", HTTP_USER_AGENT="EvilBot/1.0").status_code == 403  # the rule is read once the switch says so
    page = edge("/")
    assert page.status_code == 200 and b"analytics" in page.content.lower()  # the script is injected


def test_rollback_through_the_api_moves_the_host_at_once(alice_client, site, edge, settings):
    old = settings.ARTIFACT_ROOT / "site-0"
    old.mkdir(parents=True)
    (old / "index.html").write_text("<h1>old</h1>")
    previous = DeploymentFactory(project=site, env="production", status=Deployment.Status.READY,
                                 artifact_path="site-0")
    assert b"Home" in edge("/").content
    resp = alice_client.post(f"/v1/orgs/acme/projects/{site.pk}/rollback", {"deploymentId": previous.pk},
                             format="json")
    assert resp.status_code == 201, resp.json()
    answer = edge("/")
    assert answer.content == b"<h1>old</h1>" and answer["X-Deployment-Id"] == previous.pk


def test_unknown_host_becomes_known_when_the_project_appears(workspace, client, settings, tmp_path):
    from tests.platform_app.projects.factories import ProjectFactory

    assert client.get("/", HTTP_HOST="late.localhost").status_code == 404  # cached: nothing here
    settings.ARTIFACT_ROOT = tmp_path / "a"
    (tmp_path / "a" / "late").mkdir(parents=True)
    (tmp_path / "a" / "late" / "index.html").write_text("late")
    project = ProjectFactory(workspace=workspace, slug="late")
    project.production_deployment = DeploymentFactory(project=project, env="production", status="ready",
                                                      artifact_path="late")
    project.save()
    assert client.get("/", HTTP_HOST="late.localhost").content == b"late"


def test_other_processes_drop_their_entries_at_the_next_version_check(settings):
    settings.EDGE_LOCAL_CHECK_SECONDS = 0  # check the shared version on every lookup
    # the same cache as another web process holds it
    other = LocalCache(hosts.name, ttl=60, check_setting="EDGE_LOCAL_CHECK_SECONDS")
    other.get("warm")  # reads the current version
    other.set("site.localhost", "old answer")
    assert other.get("site.localhost") == "old answer"
    edge_hosts_invalidate()  # this process: promote, rollback, a domain change...
    assert other.get("site.localhost") is MISSING


def test_entries_expire_and_are_bounded():
    cache = LocalCache("test-bounded", ttl=60, max_entries=2, max_bytes=10, check_setting="EDGE_LOCAL_CHECK_SECONDS")
    cache.set("a", 1, size=4)
    cache.set("b", 2, size=4)
    cache.set("c", 3, size=4)  # over both bounds: the oldest goes
    assert cache.get("a") is MISSING and cache.get("c") == 3
    cache.set("huge", 4, size=11)
    assert cache.get("huge") is MISSING
    generation = cache.generation
    cache.clear()
    cache.set("stale", 5, generation=generation)  # computed before the clear: not kept
    assert cache.get("stale") is MISSING


def test_a_computed_value_is_kept_only_when_keep_says_so_and_sized_by_its_size_function():
    cache = LocalCache("test-keep", ttl=60, max_bytes=10, check_setting="EDGE_LOCAL_CHECK_SECONDS")
    assert cache.get_or_compute("none", lambda: None, keep=lambda value: value is not None) is None
    assert cache.get("none") is MISSING  # a miss stays a miss: the next call computes again
    assert cache.get_or_compute("short", lambda: (1, 2), size=lambda ids: 4 * len(ids)) == (1, 2)
    assert cache.get("short") == (1, 2)
    assert cache.get_or_compute("long", lambda: (1, 2, 3), size=lambda ids: 4 * len(ids)) == (1, 2, 3)
    assert cache.get("long") is MISSING  # 12 bytes: over the bound


def test_a_deployment_of_one_project_leaves_every_other_host_cached(site, edge, client, workspace, settings):
    """Invalidation per project: another project's new deployment keeps this host's entry (no query), keeps the
    platform's own host entry and what was derived from it (the generation kept answers check), and reaches its
    own hosts, including one that served nothing until now."""
    import time

    from config import local_cache
    from tests.platform_app.projects.factories import ProjectFactory

    other = ProjectFactory(workspace=workspace, slug="other")
    (settings.ARTIFACT_ROOT / "other-1").mkdir(parents=True)
    (settings.ARTIFACT_ROOT / "other-1" / "index.html").write_text("other")
    assert edge("/").status_code == 200
    assert client.get("/", HTTP_HOST="other.localhost").status_code == 404  # nothing served there yet: cached
    generation, clears = hosts.generation, local_cache.clears

    deployment = DeploymentFactory(project=other, env="production", status="ready", artifact_path="other-1")
    other.production_deployment = deployment
    other.save(update_fields=["production_deployment"])

    with CaptureQueriesContext(connection) as queries:
        assert edge("/").status_code == 200
    assert len(queries) == 0, [q["sql"] for q in queries]  # site.localhost kept its entry
    assert hosts.holds(generation, time.monotonic()) and local_cache.clears == clears  # kept answers stand
    assert client.get("/", HTTP_HOST="other.localhost").content == b"other"  # its own host moved at once


def test_other_processes_drop_only_the_projects_hosts(site, settings):
    settings.EDGE_LOCAL_CHECK_SECONDS = 0
    other = LocalCache(hosts.name, ttl=60, check_setting="EDGE_LOCAL_CHECK_SECONDS")  # another web process
    other.get("warm")
    other.set("site.localhost", "site's answer", tag=site.pk)
    other.set("b.localhost", "another project's answer", tag="prj_other")
    other.set("platform", "the platform itself")
    edge_hosts_invalidate(project_id=site.pk)
    assert other.get("site.localhost") is MISSING
    assert other.get("b.localhost") == "another project's answer" and other.get("platform") == "the platform itself"
    edge_hosts_invalidate()  # a domain change: everything
    assert other.get("b.localhost") is MISSING and other.get("platform") is MISSING


def test_a_tag_set_numbered_but_not_yet_written_drops_nothing_else_until_it_comes(settings):
    """A writer numbers its tag set (INCR), then writes it: another process checking in between waits for it
    instead of dropping every host, drops its tags once it is there, and drops everything only when it is still
    missing at the next check (a writer that died between the two)."""
    from django.core.cache import cache

    settings.EDGE_LOCAL_CHECK_SECONDS = 0
    other = LocalCache(hosts.name, ttl=60, check_setting="EDGE_LOCAL_CHECK_SECONDS")  # another web process
    cache.add(hosts.tag_log_key, 0, None)
    other.get("warm")
    other.set("a.localhost", "a's answer", tag="prj_a")
    other.set("b.localhost", "b's answer", tag="prj_b")
    number = cache.incr(hosts.tag_log_key)  # numbered, not written yet
    assert other.get("b.localhost") == "b's answer" and other.get("a.localhost") == "a's answer"
    cache.set(f"{hosts.tag_log_key}:{number}", ["prj_a"], 3600)  # written a moment later
    assert other.get("a.localhost") is MISSING and other.get("b.localhost") == "b's answer"

    cache.incr(hosts.tag_log_key)  # numbered, and never written
    assert other.get("b.localhost") == "b's answer"  # the first check waits
    other.TAG_LOG_WAIT_SECONDS = 0  # (2 s: the wait is over)
    assert other.get("b.localhost") is MISSING  # and gives up on it: everything goes
