"""Project pages: new project (template, Git URL with detection), deployments (deploy, redeploy, rollback,
cancel), the deployment page, settings, environment variables. Viewers see no button that would fail and
their POSTs are 403."""
import pytest

from platform_app.models import Deployment, EnvVar, Environment, Project
from platform_app.services.env.env import value_of
from tests.platform_app.deployments.factories import DeploymentFactory, LogLineFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def built(owner, django_capture_on_commit_callbacks):
    """A project created from the static template on the page; its first build ran (eager Celery)."""
    with django_capture_on_commit_callbacks(execute=True):
        resp = owner.post("/dashboard/acme/new/", {"action": "template", "t-name": "Blog", "t-template": "static-site"})
    assert resp.status_code == 302
    project = Project.objects.get(slug="blog")
    deployment = project.deployments.get()
    assert resp["Location"] == f"/dashboard/acme/deployments/{deployment.pk}/"
    deployment.refresh_from_db()
    assert deployment.status == "ready", deployment.error_message
    return project


def test_new_project_page_lists_templates_with_their_framework(owner):
    page = owner.get("/dashboard/acme/new/").content.decode()
    assert "Static site (static)" in page and "Create and deploy" in page


def test_new_project_from_template_deploys_and_the_page_shows_it(owner, built):
    project = Project.objects.get(pk=built.pk)
    deployment = project.deployments.get()
    assert project.production_deployment_id == deployment.pk and project.template == "static-site"
    page = owner.get(f"/dashboard/acme/deployments/{deployment.pk}/").content.decode()
    assert 'class="badge badge-ready"' in page and "Deployment ready." in page
    assert "blog.localhost" in page and "/logs/stream" in page and "deployment-log.js" in page
    assert project.git_url not in page


def test_new_project_bad_input_creates_nothing(owner):
    resp = owner.post("/dashboard/acme/new/", {"action": "template", "t-name": "", "t-template": "static-site"})
    assert resp.status_code == 400
    resp = owner.post("/dashboard/acme/new/", {"action": "template", "t-name": "X", "t-template": "cobol"})
    assert resp.status_code == 400
    resp = owner.post("/dashboard/acme/new/", {"action": "inspect", "g-git_url": "file:///etc"})
    assert resp.status_code == 400 and b"Detected" not in resp.content
    assert not Project.objects.exists()


def test_git_url_shows_the_detected_framework_before_creating(owner, make_repo, django_capture_on_commit_callbacks):
    url = make_repo({"package.json": '{"name": "web", "scripts": {"build": "node build.js"}}', "build.js": ""})
    resp = owner.post("/dashboard/acme/new/", {"action": "inspect", "g-git_url": url})
    assert resp.status_code == 200
    assert b"Detected: node" in resp.content and b'value="git"' in resp.content
    assert not Project.objects.exists()
    with django_capture_on_commit_callbacks(execute=False):
        resp = owner.post("/dashboard/acme/new/", {"action": "git", "g-git_url": url, "g-branch": "main",
                                                   "g-name": "Web", "g-framework": "node"})
    assert resp.status_code == 302
    project = Project.objects.get()
    assert project.name == "Web" and project.framework == "node" and project.deployments.count() == 1


def test_project_page_deploy_redeploy_rollback(owner, built, django_capture_on_commit_callbacks):
    first = built.deployments.get()
    page = owner.get("/dashboard/acme/projects/blog/").content.decode()
    assert "Redeploy" in page and "Roll back to this" not in page  # the only ready build is production
    with django_capture_on_commit_callbacks(execute=True):
        resp = owner.post(f"/dashboard/acme/deployments/{first.pk}/redeploy")
    second = Deployment.objects.exclude(pk=first.pk).get()
    assert resp["Location"] == f"/dashboard/acme/deployments/{second.pk}/"
    assert second.env == "production" and second.status == "ready"
    built.refresh_from_db()
    assert built.production_deployment_id == second.pk
    assert "Roll back to this" in owner.get("/dashboard/acme/projects/blog/").content.decode()
    assert owner.post("/dashboard/acme/projects/blog/rollback", {"deployment": first.pk}).status_code == 302
    built.refresh_from_db()
    assert built.production_deployment_id == first.pk
    assert owner.post("/dashboard/acme/projects/blog/rollback", {"deployment": "dpl_nope"}).status_code == 404


def test_deploy_form_and_its_bad_input(owner, built, django_capture_on_commit_callbacks):
    resp = owner.post("/dashboard/acme/projects/blog/", {"env": "staging", "branch": ""})
    assert resp.status_code == 400  # not one of the environments
    with django_capture_on_commit_callbacks(execute=False):
        resp = owner.post("/dashboard/acme/projects/blog/", {"env": "preview", "branch": "main"})
    assert resp.status_code == 302
    queued = Deployment.objects.get(status="queued")
    assert queued.env == "preview"
    page = owner.get("/dashboard/acme/projects/blog/").content.decode()
    assert "#1 in queue" in page and "Cancel" in page
    assert owner.post(f"/dashboard/acme/deployments/{queued.pk}/cancel").status_code == 302
    queued.refresh_from_db()
    assert queued.status == "canceled"
    assert owner.post(f"/dashboard/acme/deployments/{queued.pk}/cancel").status_code == 409


def test_viewer_sees_no_deploy_buttons_and_posts_are_403(viewer, project):
    ready = DeploymentFactory(project=project, status="ready")
    DeploymentFactory(project=project, status="ready")
    page = viewer.get("/dashboard/acme/projects/site/").content.decode()
    assert "Redeploy" not in page and "Roll back" not in page and ">Deploy<" not in page
    assert "Redeploy" not in viewer.get(f"/dashboard/acme/deployments/{ready.pk}/").content.decode()
    assert viewer.post("/dashboard/acme/projects/site/", {"env": "production"}).status_code == 403
    assert viewer.post(f"/dashboard/acme/deployments/{ready.pk}/redeploy").status_code == 403
    assert viewer.post("/dashboard/acme/projects/site/rollback", {"deployment": ready.pk}).status_code == 403
    assert viewer.post("/dashboard/acme/projects/site/settings/", {"name": "x"}).status_code == 403
    assert Deployment.objects.count() == 2


def test_failed_deployment_shows_the_doctors_fix(owner, project):
    failed = DeploymentFactory(project=project, status="error", error_message="build failed")
    LogLineFactory(deployment=failed, seq=1, text="ModuleNotFoundError: No module named 'flask'")
    page = owner.get(f"/dashboard/acme/deployments/{failed.pk}/").content.decode()
    assert "Python module flask is not installed" in page and "requirements.txt" in page


def test_settings_save_and_refuse_bad_input(owner, project):
    data = {"name": "Site", "production_branch": "main", "framework": "", "root_directory": "web", "auto_deploy": "on"}
    assert owner.post("/dashboard/acme/projects/site/settings/", data).status_code == 302
    project.refresh_from_db()
    assert project.root_directory == "web"
    bad = owner.post("/dashboard/acme/projects/site/settings/", {**data, "root_directory": "../etc"})
    assert bad.status_code == 400 and b"relative path" in bad.content
    bad = owner.post("/dashboard/acme/projects/site/settings/", {**data, "framework": "cobol"})
    assert bad.status_code == 400
    project.refresh_from_db()
    assert project.root_directory == "web" and project.framework == ""


def test_env_vars_add_mask_reveal_import_delete(owner, project):
    resp = owner.post("/dashboard/acme/projects/site/env/", {
        "action": "add", "v-key": "API_KEY", "v-value": "s3cr3t-value", "v-type": "secret",
        "v-targets": ["production"]})
    assert resp.status_code == 302
    var = EnvVar.objects.get(key="API_KEY")
    assert value_of(var) == "s3cr3t-value" and var.targets == ["production"]
    page = owner.get("/dashboard/acme/projects/site/env/").content.decode()
    assert "API_KEY" in page and "s3cr3t-value" not in page
    revealed = owner.post("/dashboard/acme/projects/site/env/", {"action": "reveal"}).content.decode()
    assert "s3cr3t-value" in revealed
    assert project.workspace.audit_events.filter(action="env_var.revealed").exists()

    resp = owner.post("/dashboard/acme/projects/site/env/", {
        "action": "import", "i-dotenv": "A=1\nB=two\n", "i-type": "plain", "i-targets": ["preview"]})
    assert resp.status_code == 302
    assert sorted(EnvVar.objects.values_list("key", flat=True)) == ["A", "API_KEY", "B"]
    assert owner.post(f"/dashboard/acme/projects/site/env/{var.pk}/delete").status_code == 302
    assert not EnvVar.objects.filter(pk=var.pk).exists()


@pytest.mark.parametrize("data", [
    {"action": "add", "v-key": "1BAD", "v-value": "x", "v-type": "plain", "v-targets": ["production"]},
    {"action": "add", "v-key": "OK", "v-value": "x", "v-type": "plain", "v-targets": ["nowhere"]},
    {"action": "add", "v-key": "OK", "v-value": "x", "v-type": "plain"},
    {"action": "import", "i-dotenv": "1X=2", "i-type": "plain", "i-targets": ["preview"]},
    {"action": "environment", "e-name": "Not Valid"},
])
def test_env_bad_input_is_400_and_changes_nothing(owner, project, data):
    resp = owner.post("/dashboard/acme/projects/site/env/", data)
    assert resp.status_code == 400
    assert not EnvVar.objects.exists() and not Environment.objects.filter(builtin=False).exists()


def test_environments_create_and_delete(owner, project):
    assert owner.post("/dashboard/acme/projects/site/env/", {"action": "environment", "e-name": "staging",
                                                             "e-branch_pattern": "release/*"}).status_code == 302
    env = Environment.objects.get(name="staging")
    assert env.branch_pattern == "release/*"
    assert owner.post(f"/dashboard/acme/projects/site/environments/{env.pk}/delete").status_code == 302
    assert not Environment.objects.filter(pk=env.pk).exists()


def test_env_page_by_role(developer, viewer, project):
    assert b"Add variable" in developer.get("/dashboard/acme/projects/site/env/").content
    page = viewer.get("/dashboard/acme/projects/site/env/").content
    assert b"Add variable" not in page and b"cannot read environment variables" in page
    assert viewer.post("/dashboard/acme/projects/site/env/", {"action": "reveal"}).status_code == 403
    assert viewer.post("/dashboard/acme/projects/site/env/", {
        "action": "add", "v-key": "X", "v-value": "1", "v-type": "plain", "v-targets": ["production"],
    }).status_code == 403
    assert not EnvVar.objects.exists()


def test_deployments_table_refreshes_itself_with_htmx_while_a_build_runs(owner, project):
    running = DeploymentFactory(project=project, status="building")
    page = owner.get("/dashboard/acme/projects/site/").content.decode()
    assert 'hx-trigger="every 3s"' in page
    fragment = owner.get("/dashboard/acme/projects/site/", headers={"HX-Request": "true"}).content.decode()
    assert "<html" not in fragment and 'id="deployments"' in fragment and "badge-building" in fragment
    running.status = "ready"
    running.save()
    fragment = owner.get("/dashboard/acme/projects/site/", headers={"HX-Request": "true"}).content.decode()
    assert "hx-trigger" not in fragment and "badge-ready" in fragment


def test_connected_provider_repository_is_detected_then_created(owner, workspace, settings, httpserver, git_server,
                                                                 make_local_repo, django_capture_on_commit_callbacks):
    from platform_app.services.env.crypto import encrypt
    from tests.platform_app.providers.factories import GitConnectionFactory

    git_server.serve(make_local_repo({"index.html": "<h1>api</h1>"}), name="api")
    settings.GIT_PROVIDERS = {**settings.GIT_PROVIDERS, "git-b": {
        **settings.GIT_PROVIDERS["git-b"], "client_id": "gl", "client_secret": "s",
        "api_url": httpserver.url_for("/gl/api/v4").rstrip("/"), "web_url": git_server.base}}
    GitConnectionFactory(workspace=workspace, provider="git-b", account="ada", token_encrypted=encrypt("glpat-x"))
    httpserver.expect_request("/gl/api/v4/projects", headers={"Authorization": "Bearer glpat-x"}).respond_with_json(
        [{"path_with_namespace": "api", "http_url_to_repo": f"{git_server.base}/api.git", "default_branch": "main",
          "visibility": "private"}])
    page = owner.get("/dashboard/acme/new/", {"provider": "git-b"}).content.decode()
    assert "git-b (ada)" in page and 'name="g-repo" value="api"' in page
    resp = owner.post("/dashboard/acme/new/", {"action": "inspect", "g-provider": "git-b", "g-repo": "api"})
    assert resp.status_code == 200 and b"Detected: static" in resp.content and b"git-b:api" in resp.content
    with django_capture_on_commit_callbacks(execute=False):
        resp = owner.post("/dashboard/acme/new/", {"action": "git", "g-provider": "git-b", "g-repo": "api",
                                                   "g-branch": "main", "g-framework": "static"})
    assert resp.status_code == 302
    project = Project.objects.get()
    assert (project.git_provider, project.git_repo, project.git_url, project.name) == ("git-b", "api", "", "api")


def test_deployment_page_of_a_queued_build_follows_its_log(owner, project):
    DeploymentFactory(project=project, status="queued")
    queued = DeploymentFactory(project=project, status="queued")
    page = owner.get(f"/dashboard/acme/deployments/{queued.pk}/").content.decode()
    assert "#2 in the build queue" in page and 'data-finished="false"' in page and ">Cancel<" in page
    assert owner.get("/dashboard/acme/deployments/dpl_nope/").status_code == 404


def test_env_var_update_changes_the_value_only(owner, viewer, project):
    owner.post("/dashboard/acme/projects/site/env/", {
        "action": "add", "v-key": "TOKEN", "v-value": "one", "v-type": "secret", "v-targets": ["production"]})
    var = EnvVar.objects.get()
    assert viewer.post(f"/dashboard/acme/projects/site/env/{var.pk}/update", {"value": "x", "type": "plain"}
                       ).status_code == 403
    assert owner.post(f"/dashboard/acme/projects/site/env/{var.pk}/update", {"value": "two", "type": "bogus"}
                      ).status_code == 400
    assert owner.post(f"/dashboard/acme/projects/site/env/{var.pk}/update", {"value": "two", "type": "plain"}
                      ).status_code == 302
    var.refresh_from_db()
    assert value_of(var) == "two" and var.type == "plain" and var.targets == ["production"]
    assert owner.post("/dashboard/acme/projects/site/env/ev_nope/update", {"value": "x", "type": "plain"}
                      ).status_code == 404


def test_pages_carry_no_inline_script(owner, project):
    import re as _re

    deployment = DeploymentFactory(project=project, status="building")
    for path in ("/dashboard/", "/dashboard/acme/", "/dashboard/acme/new/", "/dashboard/acme/projects/site/",
                 f"/dashboard/acme/deployments/{deployment.pk}/", "/dashboard/acme/projects/site/env/",
                 "/dashboard/acme/projects/site/settings/", "/dashboard/account/", "/dashboard/account/mfa/"):
        resp = owner.get(path)
        assert resp.status_code == 200, path
        html = resp.content.decode()
        scripts = _re.findall(r"<script\b[^>]*>", html)
        assert scripts and all(" src=" in tag for tag in scripts), path
        assert not _re.findall(r"<[a-z]+\b[^>]*\son[a-z]+=", html), path  # no inline event handler either


def test_doctor_fix_opens_a_pull_request_through_the_provider(owner, viewer, workspace, httpserver, settings):
    import base64

    from platform_app.services.deployments.deployment_log import log_append
    from platform_app.services.providers.git_connections import connection_save
    from tests.platform_app.projects.factories import ProjectFactory

    settings.GIT_PROVIDERS = {**settings.GIT_PROVIDERS, "git-a": {
        **settings.GIT_PROVIDERS["git-a"], "client_id": "gh", "api_url": httpserver.url_for("/api").rstrip("/")}}
    project = ProjectFactory(workspace=workspace, slug="py-app", git_provider="git-a", git_repo="acme/py", git_url="")
    connection_save(workspace=workspace, provider="git-a", token="gho_token")
    failed = DeploymentFactory(project=project, env="production", status="error")
    log_append(failed, "ModuleNotFoundError: No module named 'flask'")
    page = owner.get(f"/dashboard/acme/deployments/{failed.pk}/").content.decode()
    assert "Open a pull request with the fix" in page
    assert "Open a pull request" not in viewer.get(f"/dashboard/acme/deployments/{failed.pk}/").content.decode()
    assert viewer.post(f"/dashboard/acme/deployments/{failed.pk}/fix-pr").status_code == 403
    repo = "/api/repos/acme/py"
    httpserver.expect_request(f"{repo}/contents/requirements.txt", query_string="ref=main").respond_with_json(
        {"content": base64.b64encode(b"gunicorn==23.0.0\n").decode(), "sha": "old"})
    httpserver.expect_request(f"{repo}/git/ref/heads/main").respond_with_json({"object": {"sha": "abc123"}})
    httpserver.expect_request(f"{repo}/git/refs", method="POST").respond_with_json({"ref": "x"}, status=201)
    httpserver.expect_request(f"{repo}/contents/requirements.txt", method="GET").respond_with_json({"sha": "old"})
    httpserver.expect_request(f"{repo}/contents/requirements.txt", method="PUT").respond_with_json({}, status=201)
    httpserver.expect_request(f"{repo}/pulls", method="POST").respond_with_json(
        {"html_url": "https://github.example/acme/py/pull/7", "number": 7}, status=201)
    resp = owner.post(f"/dashboard/acme/deployments/{failed.pk}/fix-pr", follow=True)
    assert resp.status_code == 200 and "https://github.example/acme/py/pull/7" in resp.content.decode()
    put = next(req for req, _ in httpserver.log if req.method == "PUT")
    assert base64.b64decode(put.get_json()["content"]).decode() == "gunicorn==23.0.0\nflask\n"


def test_an_image_deployment_shows_its_reference_digest_and_registry(owner, workspace):
    from tests.platform_app.projects.factories import ProjectFactory

    project = ProjectFactory(workspace=workspace, name="Img", slug="img", source="image", git_url="",
                             image_ref="registry.example.com/team/app:1.2")
    digest = "sha256:" + "ab" * 32
    deployment = DeploymentFactory(project=project, status="ready", snapshot={
        "image": project.image_ref, "imageDigest": digest, "registry": "registry.example.com",
        "imageRepository": "team/app", "imageLayers": 2, "imageBytes": 1048576})
    page = owner.get(f"/dashboard/acme/deployments/{deployment.pk}/").content.decode()
    assert "registry.example.com/team/app:1.2" in page and f'<code id="deployment-digest">{digest}</code>' in page
    assert "registry.example.com (2 layers, 1.0\xa0MB compressed)" in page
    listing = owner.get("/dashboard/acme/projects/img/").content.decode()
    assert digest[:19] in listing


def test_an_image_projects_registry_credentials_are_set_replaced_and_removed_never_shown(owner, developer, workspace):
    from tests.platform_app.projects.factories import ProjectFactory

    project = ProjectFactory(workspace=workspace, name="Img", slug="img", source="image", git_url="",
                             image_ref="registry.example.com/team/app:1.2")
    url = "/dashboard/acme/projects/img/settings/"
    assert "anonymously" in owner.get(url).content.decode()
    form = {"action": "registry", "r-username": "deployer", "r-password": "first-secret"}
    assert developer.post(url, form).status_code == 403
    assert owner.post(url, form).status_code == 302
    project.refresh_from_db()
    first = project.registry_credentials_encrypted
    assert first and "first-secret" not in first
    page = owner.get(url).content.decode()
    assert "with the credentials saved here" in page and "first-secret" not in page and "Replace credentials" in page
    assert owner.post(url, {**form, "r-password": "second-secret"}).status_code == 302
    project.refresh_from_db()
    assert project.registry_credentials_encrypted not in ("", first)
    bad = owner.post(url, {"action": "registry", "r-username": "deployer", "r-password": ""})
    assert bad.status_code == 400
    assert owner.post(url, {"action": "registry-remove"}).status_code == 302
    project.refresh_from_db()
    assert project.registry_credentials_encrypted == ""


def test_an_image_projects_page_shows_what_production_runs_and_deploys_its_image(owner, workspace):
    from platform_app.models import Deployment, Project
    from tests.platform_app.projects.factories import ProjectFactory

    project = ProjectFactory(workspace=workspace, name="Img", slug="img", source="image", git_url="",
                             image_ref="registry.example.com/team/app:1.2")
    digest = "sha256:" + "cd" * 32
    running = DeploymentFactory(project=project, status="ready", snapshot={
        "image": project.image_ref, "imageDigest": digest, "registry": "registry.example.com"})
    Project.objects.filter(pk=project.pk).update(production_deployment=running)
    page = owner.get("/dashboard/acme/projects/img/").content.decode()
    assert f"production runs <code>{digest}</code> from registry.example.com" in page
    assert 'name="branch"' not in page
    resp = owner.post("/dashboard/acme/projects/img/", {"env": "production"})
    assert resp.status_code == 302
    made = Deployment.objects.exclude(pk=running.pk).get()
    assert resp["Location"].endswith(f"/deployments/{made.pk}/")
    assert made.status == "error" and "`image` runtime" in made.error_message  # no node of acme runs images
