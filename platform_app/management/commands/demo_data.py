"""Create (or refresh) the demo account and workspace that `make run` prints."""
from django.conf import settings
from django.core.management.base import BaseCommand
from django.utils import timezone

from config.demo import demo_loaders

from platform_app.models import Membership, User, Workspace
from platform_app.services.identity.keys import signing_key
from platform_app.services.teams.workspaces import workspace_create

DEMO_EMAIL = "demo@example.com"
DEMO_PASSWORD = "demo-password-2026"


class Command(BaseCommand):
    help = "Create the demo user, workspace and sample data of every service (idempotent)."

    def handle(self, *args, **options):
        signing_key()  # generate the development JWT key before web and worker start
        user = User.objects.filter(email=DEMO_EMAIL).first()
        if user is None:
            user = User.objects.create_superuser(email=DEMO_EMAIL, password=DEMO_PASSWORD, name="Demo User",
                                                 email_verified_at=timezone.now())  # a made-up address: no link
        elif user.email_verified_at is None:  # a demo database from before email verification
            User.objects.filter(pk=user.pk).update(email_verified_at=timezone.now())
        workspace = Workspace.objects.filter(slug="demo").first()
        if workspace is None:
            workspace = workspace_create(user=user, name="Demo", slug="demo")
        elif not Membership.objects.filter(workspace=workspace, user=user).exists():
            Membership.objects.create(workspace=workspace, user=user, role="owner")
        for _name, load in demo_loaders():  # each app registers its own (config/demo.py)
            load(user=user, workspace=workspace, stdout=self.stdout)
        site = settings.SITE_URL.rstrip("/")
        self.stdout.write(self.style.SUCCESS(
            "\nDemo data ready.\n"
            f"  Dashboard: {site}/dashboard/   API docs: {site}/v1/docs   Staff admin: {site}/admin/\n"
            f"  email:     {DEMO_EMAIL}\n"
            f"  password:  {DEMO_PASSWORD}\n"
            f"  workspace: demo ({workspace.pk})\n"
        ))

