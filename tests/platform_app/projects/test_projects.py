"""Projects: from a real Git repository (served over HTTP), from an image, from each template; update, delete,
auto-deploy."""
import subprocess
from pathlib import Path

import pytest

from platform_app.models import AuditEvent, Deployment, Project
from tests.platform_app.deployments.factories import DeploymentFactory
from tests.platform_app.projects.factories import ProjectFactory, ProjectGroupFactory

pytestmark = pytest.mark.django_db


def create(client, **body):
    return client.post("/v1/orgs/acme/projects", body, format="json")


def test_create_from_git_repository(alice, workspace, as_user, make_repo):
    url = make_repo({"index.html": "<h1>hi</h1>"}, default="trunk", branches=("feature",))
    res = create(as_user(alice), name="Marketing Site", gitUrl=url)
    assert res.status_code == 201, res.json()
    body = res.json()
    assert body["slug"] == "marketing-site" and body["source"] == "git"
    assert body["productionBranch"] == "trunk"  # the repository's default branch
    assert body["gitUrl"] == url and body["orgId"] == workspace.pk
    assert body["url"] == "http://marketing-site.localhost:8000/"
    project = Project.objects.get()
    assert project.workspace == workspace and project.git_url == url
    assert AuditEvent.objects.filter(action="project.created", target_id=project.pk).exists()


def test_unreadable_repository_is_400_without_gits_reason(alice, workspace, as_user, git_server):
    res = create(as_user(alice), name="Ghost", gitUrl=f"{git_server.base}/missing.git")
    assert res.status_code == 400
    assert res.json()["code"] == "git_unreachable"
    # git's own words (and whatever they would say about the server) stay in the server log
    assert res.json()["message"] == "This address cannot be reached from the platform."
    assert not Project.objects.exists()


def test_option_looking_url_is_rejected(alice, workspace, as_user):
    res = create(as_user(alice), name="Evil", gitUrl="--upload-pack=touch /tmp/pwned")
    assert res.status_code == 400
    assert not Project.objects.exists()


def test_unknown_production_branch_is_400(alice, workspace, as_user, make_repo):
    url = make_repo({"index.html": "x"})
    res = create(as_user(alice), name="Site", gitUrl=url, productionBranch="nope")
    assert res.status_code == 400
    assert not Project.objects.exists()


def test_slug_rules(alice, workspace, charlie, as_user, make_repo):
    url = make_repo({"index.html": "x"})
    client = as_user(alice)
    assert create(client, name="A", gitUrl=url, slug="Not_A_Label").status_code == 400
    assert create(client, name="A", gitUrl=url, slug="-bad").status_code == 400
    assert create(client, name="A", gitUrl=url, slug="a" * 64).status_code == 400
    assert create(client, name="A", gitUrl=url, slug="shop").status_code == 201
    # unique across the platform, not only the workspace
    res = as_user(charlie).post("/v1/orgs/charlies/projects", {"name": "B", "gitUrl": url, "slug": "shop"},
                                format="json")
    assert res.status_code == 409 and res.json()["code"] == "slug_taken"
    # a derived slug steps aside instead
    res = create(client, name="Shop", gitUrl=url)
    assert res.status_code == 201 and res.json()["slug"].startswith("shop-")
    assert Project.objects.count() == 2


def test_missing_source_and_unknown_fields(alice, workspace, as_user):
    client = as_user(alice)
    assert create(client, name="A").status_code == 400
    assert create(client, name="A", gitUrl="file:///x", price=3).status_code == 400
    assert not Project.objects.exists()


def test_provider_repo_without_connection_is_refused(alice, workspace, as_user):
    res = create(as_user(alice), name="A", provider="git-a", repo="acme/site")
    assert res.status_code in (400, 404, 409, 503)
    assert not Project.objects.exists()


def test_create_from_image(alice, workspace, as_user):
    client = as_user(alice)
    res = client.post("/v1/orgs/acme/projects/from-image", {"name": "Api", "imageRef": "registry.example.com/acme/api:1.2"},
                      format="json")
    assert res.status_code == 201
    assert res.json()["source"] == "image" and res.json()["imageRef"] == "registry.example.com/acme/api:1.2"
    bad = client.post("/v1/orgs/acme/projects/from-image", {"name": "X", "imageRef": "Not An Image!"}, format="json")
    assert bad.status_code == 400
    assert Project.objects.count() == 1


@pytest.mark.parametrize("template,framework,marker", [
    ("static-site", "static", "index.html"),
    ("python-wsgi", "python", "app.py"),
    ("node-app", "node", "package.json"),
])
def test_create_from_each_template(alice, workspace, as_user, template, framework, marker, tmp_path,
                                   hosted_git_root, git_server):
    res = as_user(alice).post("/v1/orgs/acme/projects/from-template", {"name": f"My {template}", "template": template},
                              format="json")
    assert res.status_code == 201, res.json()
    body = res.json()
    assert body["source"] == "template" and body["template"] == template and body["framework"] == framework
    # the answer never shows where the platform keeps the repository
    assert body["gitUrl"] is None and str(hosted_git_root) not in res.content.decode()
    project = Project.objects.get()
    assert project.git_url.startswith("file://") and str(hosted_git_root / workspace.pk) in project.git_url
    # the hosted repository is real: it clones, on main, with the starter's files
    checkout = tmp_path / "checkout"
    subprocess.run(["git", "clone", "--quiet", "--branch", "main", project.git_url, str(checkout)], check=True)
    assert (checkout / marker).is_file()
    # detection refuses the server path a user might have learnt...
    res = as_user(alice).post("/v1/framework/detect", {"url": project.git_url}, format="json")
    assert res.status_code == 400 and res.json()["code"] == "git_unreachable"
    # ...and, served over HTTP, agrees with the template (builds use the same detector)
    served = git_server.serve(hosted_git_root / workspace.pk / project.git_url.rsplit("/", 1)[1])
    res = as_user(alice).post("/v1/framework/detect", {"url": served}, format="json")
    assert res.status_code == 201 and res.json()["framework"] == framework


def test_unknown_template_is_400(alice, workspace, as_user, hosted_git_root):
    res = as_user(alice).post("/v1/orgs/acme/projects/from-template", {"name": "X", "template": "cobol"}, format="json")
    assert res.status_code == 400
    assert not Project.objects.exists()
    assert not Path(hosted_git_root).exists() or not any(Path(hosted_git_root).rglob("*.git"))


def test_templates_list(alice, as_user):
    res = as_user(alice).get("/v1/templates")
    assert res.status_code == 200
    names = {t["name"]: t for t in res.json()["items"]}
    assert {"static-site", "python-wsgi", "node-app"} <= set(names)
    assert names["node-app"]["buildCommand"] == "npm run build"
    assert names["python-wsgi"]["startCommand"] == "python app.py"


def test_get_list_update(alice, bob, workspace, as_user):
    group = ProjectGroupFactory(workspace=workspace)
    project = ProjectFactory(workspace=workspace, slug="web")
    ProjectFactory()  # another workspace's
    assert [p["slug"] for p in as_user(bob).get("/v1/orgs/acme/projects").json()["items"]] == ["web"]
    assert as_user(bob).get("/v1/orgs/acme/projects/web").json()["id"] == project.pk
    res = as_user(alice).patch(f"/v1/orgs/acme/projects/{project.pk}", {
        "name": "Web", "framework": "vite", "buildCommand": "npm run build", "outputDirectory": "dist",
        "rootDirectory": "apps/web", "productionBranch": "release", "autoDeploy": False, "groupId": group.pk,
    }, format="json")
    assert res.status_code == 200, res.json()
    project.refresh_from_db()
    assert (project.name, project.framework, project.root_directory, project.production_branch,
            project.auto_deploy, project.group) == ("Web", "vite", "apps/web", "release", False, group)
    assert AuditEvent.objects.filter(action="project.updated").exists()


@pytest.mark.parametrize("body", [{"rootDirectory": "../etc"}, {"framework": "cobol"}, {"productionBranch": ""},
                                  {"slug": "renamed"}, {"groupId": "grp_nope"}])
def test_bad_updates_change_nothing(alice, workspace, as_user, body):
    project = ProjectFactory(workspace=workspace)
    res = as_user(alice).patch(f"/v1/orgs/acme/projects/{project.pk}", body, format="json")
    assert res.status_code == 400
    before = Project.objects.get(pk=project.pk)
    assert (before.root_directory, before.framework, before.production_branch, before.slug) == (
        "", "", "main", project.slug)


def test_delete_removes_project_and_deployments(alice, workspace, as_user):
    project = ProjectFactory(workspace=workspace)
    DeploymentFactory(project=project, branch="main")
    res = as_user(alice).delete(f"/v1/orgs/acme/projects/{project.pk}")
    assert res.status_code == 200 and res.json()["id"] == project.pk
    assert not Project.objects.exists() and not Deployment.objects.exists()
    assert AuditEvent.objects.filter(action="project.deleted", target_id=project.pk).exists()


def test_delete_template_project_removes_hosted_repository(alice, workspace, as_user, hosted_git_root,
                                                           django_capture_on_commit_callbacks):
    client = as_user(alice)
    project_id = client.post("/v1/orgs/acme/projects/from-template", {"name": "S", "template": "static-site"},
                             format="json").json()["id"]
    assert list(Path(hosted_git_root).rglob("*.git"))
    with django_capture_on_commit_callbacks(execute=True):
        assert client.delete(f"/v1/orgs/acme/projects/{project_id}").status_code == 200
    assert not list(Path(hosted_git_root).rglob("*.git"))


def test_other_workspace_project_is_404(alice, charlie, workspace, as_user):
    project = ProjectFactory(workspace=workspace)
    client = as_user(charlie)
    assert client.get(f"/v1/orgs/charlies/projects/{project.pk}").status_code == 404
    assert client.delete(f"/v1/orgs/charlies/projects/{project.pk}").status_code == 404
    assert Project.objects.filter(pk=project.pk).exists()


def test_auto_deploy_status(alice, workspace, as_user):
    client = as_user(alice)
    git_project = ProjectFactory(workspace=workspace, production_branch="main")
    body = client.get(f"/v1/orgs/acme/projects/{git_project.pk}/auto-deploy-status").json()
    assert body["enabled"] is True and body["reason"] is None
    assert body["rules"][0] == {"branch": "main", "env": "production"}
    assert body["rules"][1]["env"] == "preview"

    git_project.auto_deploy = False
    git_project.save()
    body = client.get(f"/v1/orgs/acme/projects/{git_project.pk}/auto-deploy-status").json()
    assert body["enabled"] is False and body["reason"] == "auto_deploy_disabled" and body["rules"] == []

    image = ProjectFactory(workspace=workspace, source="image", git_url="", image_ref="nginx:1")
    body = client.get(f"/v1/orgs/acme/projects/{image.pk}/auto-deploy-status").json()
    assert body["enabled"] is False and body["reason"] == "not_git_repository"


def test_local_repositories_are_refused_under_every_setting(alice, workspace, as_user, make_local_repo, settings):
    url = make_local_repo({"index.html": "x"}).as_uri()
    client = as_user(alice)
    for body in ({"name": "A", "gitUrl": url}, {"name": "B", "gitUrl": "/srv/repos/app.git"}):
        res = create(client, **body)
        assert res.status_code == 400 and res.json()["code"] == "git_unreachable"
    res = client.post("/v1/framework/detect", {"url": url}, format="json")
    assert res.status_code == 400
    assert create(client, name="C", gitUrl="ext::sh -c touch% /tmp/pwned").status_code == 400
    assert not Project.objects.exists()
