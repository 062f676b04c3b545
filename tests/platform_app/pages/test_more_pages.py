"""Settings tab (deploy hooks, preview protection), secret findings on the Environment tab, the Agents tab."""
import pytest

from platform_app.models import AgentInvite, DeployHook, EnvVar, PreviewProtection, Project, SecretFinding
from tests.platform_app.deployments.factories import DeployHookFactory

pytestmark = pytest.mark.django_db


def test_deploy_hook_url_is_shown_once_and_deletes(owner, project):
    resp = owner.post("/dashboard/acme/projects/site/settings/", {"action": "hook", "h-name": "cms", "h-branch": ""})
    assert resp.status_code == 200
    hook = DeployHook.objects.get()
    assert hook.branch == "main" and b"/v1/hooks/deploy/dh_" in resp.content
    assert b"/v1/hooks/deploy/dh_" not in owner.get("/dashboard/acme/projects/site/settings/").content
    assert owner.post(f"/dashboard/acme/projects/site/hooks/{hook.pk}/delete").status_code == 302
    assert not DeployHook.objects.exists()
    assert owner.post("/dashboard/acme/projects/site/hooks/nope/delete").status_code == 404
    assert owner.post("/dashboard/acme/projects/site/settings/", {"action": "hook", "h-name": ""}).status_code == 400


def test_preview_protection_by_password(owner, project):
    resp = owner.post("/dashboard/acme/projects/site/settings/", {"action": "preview", "p-mode": "password",
                                                                  "p-password": "short"})
    assert resp.status_code == 400 and b"at least 8" in resp.content
    assert not PreviewProtection.objects.filter(mode="password").exists()
    resp = owner.post("/dashboard/acme/projects/site/settings/", {"action": "preview", "p-mode": "password",
                                                                  "p-password": "long-enough-pw"})
    assert resp.status_code == 302
    assert PreviewProtection.objects.get(project=project).mode == "password"
    assert b"behind a password" in owner.get("/dashboard/acme/projects/site/settings/").content


def test_developer_reads_settings_but_cannot_change_them(developer, project):
    DeployHookFactory(project=project)
    page = developer.get("/dashboard/acme/projects/site/settings/").content
    assert b"Create hook" not in page and b"Save settings" not in page and b"Delete" not in page
    hook = DeployHook.objects.get()
    assert developer.post(f"/dashboard/acme/projects/site/hooks/{hook.pk}/delete").status_code == 403
    assert developer.post("/dashboard/acme/projects/site/settings/", {"action": "preview", "p-mode": "off"}
                          ).status_code == 403
    assert DeployHook.objects.exists()


def test_secret_finding_ignore_and_import_refusal(owner, developer, viewer, project):
    finding = SecretFinding.objects.create(project=project, fingerprint="f1", rule="aws-access-key", file="app.py",
                                           line=3, preview="AKIA…XYZ")
    other = SecretFinding.objects.create(project=project, fingerprint="f2", rule="generic", file="b.py", line=1,
                                         preview="sk_…")
    page = developer.get("/dashboard/acme/projects/site/env/").content.decode()
    assert "app.py:3" in page and "Import" in page
    assert "Ignore" not in viewer.get("/dashboard/acme/projects/site/env/").content.decode()
    assert viewer.post(f"/dashboard/acme/projects/site/secret-findings/{finding.pk}", {"action": "ignore"}
                       ).status_code == 403
    assert owner.post(f"/dashboard/acme/projects/site/secret-findings/{finding.pk}", {"action": "ignore"}
                      ).status_code == 302
    finding.refresh_from_db()
    assert finding.ignored_at is not None
    # the project's repository is not reachable here: the import is refused and creates nothing
    resp = owner.post(f"/dashboard/acme/projects/site/secret-findings/{other.pk}", {"action": "import", "key": "1BAD"})
    assert resp.status_code == 400
    assert not EnvVar.objects.exists()


def test_agents_page_lists_and_makes_a_join_token(owner, viewer, workspace):
    assert b"No agents yet." in owner.get("/dashboard/acme/agents/").content
    assert b"Add a machine" not in viewer.get("/dashboard/acme/agents/").content
    assert viewer.post("/dashboard/acme/agents/").status_code == 403
    resp = owner.post("/dashboard/acme/agents/")
    assert resp.status_code == 201 and b"python -m platform_app.nodes --server http://localhost:8000 --join agj_" in resp.content
    assert AgentInvite.objects.filter(workspace=workspace).count() == 1


def test_project_delete_needs_its_name_and_the_admin_role(owner, developer, project):
    assert developer.post("/dashboard/acme/projects/site/delete", {"confirm": "Site"}).status_code == 403
    resp = owner.post("/dashboard/acme/projects/site/delete", {"confirm": "site"}, follow=True)
    assert b"to delete it" in resp.content and Project.objects.filter(pk=project.pk).exists()
    resp = owner.post("/dashboard/acme/projects/site/delete", {"confirm": "Site"})
    assert resp.status_code == 302 and resp["Location"] == "/dashboard/acme/"
    assert not Project.objects.filter(pk=project.pk).exists()
    assert project.workspace.audit_events.filter(action="project.deleted").exists()
