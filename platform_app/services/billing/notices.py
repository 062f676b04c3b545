"""Billing notices by email (usage cap reached, a payment failed) to whoever may manage billing: the workspace's
owners and billing members, and its billing email. Sent once the transaction commits."""
from django.core.mail import send_mail
from django.db import transaction

from platform_app.choices import Role
from platform_app.models import BillingAccount, Membership


def billing_recipients(*, workspace) -> list[str]:
    emails = list(Membership.objects.filter(workspace=workspace, role__in=(Role.OWNER, Role.BILLING))
                  .order_by("created_at").values_list("user__email", flat=True))
    account = BillingAccount.objects.filter(workspace=workspace).only("email").first()
    if account is not None and account.email:
        emails.append(account.email)
    return list(dict.fromkeys(e for e in emails if e))


def notice_send(*, workspace, subject: str, body: str) -> list[str]:
    """Mail `subject` to the billing recipients after commit; the addresses."""
    to = billing_recipients(workspace=workspace)
    if to:
        transaction.on_commit(lambda: send_mail(f"[{workspace.name}] {subject}", body, None, to))
    return to
