"""Give every ready Redis add-on's user the ACL new add-ons get (docs/resources.md): run it once after an upgrade
that changes the rules. `manage.py addons_redis_rules`."""
from django.core.management.base import BaseCommand

from platform_app.services.resources.addons import addons_redis_rules_apply


class Command(BaseCommand):
    help = "Re-apply the ACL of every ready Redis add-on's user."

    def handle(self, *args, **options):
        self.stdout.write(f"Applied the ACL of {addons_redis_rules_apply()} Redis add-on user(s).")
