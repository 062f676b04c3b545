"""A workspace's billing account row (made on first use). Imports no other service."""
from platform_app.models import BillingAccount


def account_for(*, workspace, lock: bool = False) -> BillingAccount:
    """The workspace's billing account, made if missing; locked (select_for_update) when `lock`."""
    BillingAccount.objects.get_or_create(workspace=workspace)
    rows = BillingAccount.objects.select_for_update() if lock else BillingAccount.objects
    return rows.get(workspace=workspace)
