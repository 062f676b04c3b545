"""Credentials and fixed ids for a schemathesis run, printed as JSON (docs/api-testing.md).

Run after `manage.py migrate` and `manage.py demo_data`, with the server's environment:

    .venv/bin/python -m tests.slow.seed_credentials

- platform: an API token with every scope for `fuzz@example.com` (staff), owner of workspace `fuzz` with a
  template project `app-…` and one queued deployment of it, and an image project `doomed-…` (the one the
  project-deleting operation destroys). Ids, not slugs: the run renames what it may;
- OTP: a test (sandbox) key of that workspace;
- warehouse: two sessions of the demo account (owner of the directory), as `ws-access-token` values,
  and a CSRF token for the cookie/header pair: one session for the run, one for sign-out, which ends
  the session it is sent with.
"""
import json
import os
import secrets


def seed() -> dict:
    from otp_app.services.keys import otp_key_create
    from platform_app.choices import Scope
    from warehouse_app.authentication import SESSION_KIND
    from platform_app.management.commands.demo_data import DEMO_EMAIL
    from platform_app.models import User, Workspace
    from platform_app.services.identity.auth import session_start
    from platform_app.services.deployments.deployments import deployment_trigger
    from platform_app.services.projects.projects import project_create_from_image, project_create_from_template
    from platform_app.services.identity.tokens import api_token_create
    from platform_app.services.teams.workspaces import workspace_create

    user = User.objects.filter(email="fuzz@example.com").first() or User.objects.create_user(
        email="fuzz@example.com", password=secrets.token_urlsafe(16), name="Fuzz")
    User.objects.filter(pk=user.pk).update(is_staff=True)  # the staff routes (/v1/admin/...) are exercised too
    workspace = Workspace.objects.filter(slug="fuzz").first() or workspace_create(user=user, name="Fuzz", slug="fuzz")
    project = project_create_from_template(workspace=workspace, actor=user, name="app",
                                           slug=f"app-{secrets.token_hex(3)}", template="static-site")
    doomed = project_create_from_image(workspace=workspace, actor=user, name="doomed",
                                       slug=f"doomed-{secrets.token_hex(3)}", image_ref="registry.example.com/fuzz/app")
    deployment = deployment_trigger(project=project, env="production", branch=None, trigger="api", actor=user)
    _, token = api_token_create(user=user, name="schemathesis", scopes=[s.value for s in Scope], expires=None)
    _, otp_key = otp_key_create(workspace=workspace, mode="test", name="schemathesis")

    demo = User.objects.get(email=DEMO_EMAIL)
    csrf = secrets.token_urlsafe(24)

    def access_token() -> str:
        return session_start(user=demo, kind=SESSION_KIND, user_agent="schemathesis").access_token

    return {
        "PLATFORM_TOKEN": token, "PLATFORM_ORG": workspace.pk, "PLATFORM_PROJECT": project.pk,
        "PLATFORM_DOOMED_PROJECT": doomed.pk,
        "PLATFORM_DEPLOYMENT": deployment.pk, "OTP_KEY": otp_key,
        "WAREHOUSE_ACCESS": access_token(), "WAREHOUSE_SIGN_OUT_ACCESS": access_token(), "WAREHOUSE_CSRF": csrf,
    }


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
    import django

    django.setup()
    print(json.dumps(seed()))
