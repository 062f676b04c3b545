"""`manage.py otp_key create --org <id or slug> --mode test|live [--name NAME]` prints the key once;
`manage.py otp_key revoke <prefix or id>` revokes one."""
from django.core.management.base import BaseCommand, CommandError
from django.db.models import Q

from otp_app.models import ApiKey
from otp_app.services.keys import otp_key_create, otp_key_revoke
from platform_app.models import Workspace


class Command(BaseCommand):
    help = "Create or revoke OTP API keys."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        create = sub.add_parser("create")
        create.add_argument("--org", required=True, help="workspace id or slug")
        create.add_argument("--mode", required=True, choices=["test", "live"])
        create.add_argument("--name", default="")
        revoke = sub.add_parser("revoke")
        revoke.add_argument("key", help="key id or the printed prefix")

    def handle(self, *args, action, **options):
        if action == "create":
            workspace = Workspace.objects.filter(Q(pk=options["org"]) | Q(slug=options["org"])).first()
            if workspace is None:
                raise CommandError(f"No workspace {options['org']!r}.")
            key, raw = otp_key_create(workspace=workspace, mode=options["mode"], name=options["name"])
            self.stdout.write(raw)
            self.stderr.write(f"Created {key.mode} key {key.pk} for {workspace.slug}; it is not shown again.")
        else:
            ref = options["key"]
            key = ApiKey.objects.filter(Q(pk=ref) | Q(prefix=ref[:16])).first()
            if key is None:
                raise CommandError(f"No key {ref!r}.")
            otp_key_revoke(key=key)
            self.stdout.write(f"Revoked {key.pk}.")
