"""`manage.py warehouse_role <email> customer|operator|owner [--facility <slug> ...]`"""
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from config.errors import ApplicationError
from warehouse_app.services.accounts import role_set


class Command(BaseCommand):
    help = "Set an account's warehouse role; an operator is linked to the facilities it answers for."

    def add_arguments(self, parser):
        parser.add_argument("email")
        parser.add_argument("role", choices=["customer", "operator", "owner"])
        parser.add_argument("--facility", action="append", default=[], help="facility slug (repeatable)")

    def handle(self, *args, email, role, facility, **options):
        user = get_user_model().objects.filter(email__iexact=email).first()
        if user is None:
            raise CommandError(f"No account {email}.")
        try:
            role_set(user=user, role=role, facility_slugs=facility)
        except (ApplicationError, ValueError) as exc:
            raise CommandError(str(exc))
        self.stdout.write(f"{user.email} is now {role}" + (f" of {', '.join(facility)}" if facility else "") + ".")
