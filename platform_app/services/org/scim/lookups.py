"""Reading Users and Groups: the `eq` filter, paging, and one resource of the workspace (else SCIM's 404)."""
import re

from django.conf import settings

from platform_app.models import ScimGroup, ScimUser
from platform_app.services.org.scim.common import ScimError, invalid

FILTER = re.compile(r'^\s*([A-Za-z][\w.:-]*)\s+(eq)\s+"((?:[^"\\]|\\.)*)"\s*$', re.IGNORECASE)


USER_FILTERS = {"username": "user_name__iexact", "externalid": "external_id", "displayname": "display_name"}


GROUP_FILTERS = {"displayname": "display_name__iexact", "externalid": "external_id"}


def _filtered(queryset, expression: str | None, fields: dict):
    """`attribute eq "value"` on the attributes in `fields`; anything else is 400 `invalidFilter`."""
    if not expression:
        return queryset
    match = FILTER.match(expression)
    attribute = match.group(1).lower().rsplit(":", 1)[-1] if match else ""
    if match is None or attribute not in fields:
        raise invalid(f"Unsupported filter; use `attribute eq \"value\"` on one of "
                       f"{', '.join(sorted(fields))}.", "invalidFilter")
    value = re.sub(r"\\(.)", r"\1", match.group(3))
    return queryset.filter(**{fields[attribute]: value})


def scim_page(queryset, *, start_index: int, count: int | None) -> tuple[int, list]:
    """(totalResults, the page): `startIndex` is 1-based; `count` at most SCIM_MAX_RESULTS."""
    total = queryset.count()
    count = settings.SCIM_MAX_RESULTS if count is None else max(0, min(count, settings.SCIM_MAX_RESULTS))
    first = max(start_index, 1) - 1
    return total, list(queryset[first:first + count]) if count else []


def scim_users(*, workspace, filter: str | None = None):
    return _filtered(ScimUser.objects.filter(workspace=workspace).select_related("user")
                     .prefetch_related("groups").order_by("created_at", "pk"), filter, USER_FILTERS)


def scim_groups(*, workspace, filter: str | None = None):
    return _filtered(ScimGroup.objects.filter(workspace=workspace).prefetch_related("members")
                     .order_by("created_at", "pk"), filter, GROUP_FILTERS)


def scim_user_get(*, workspace, user_id: str) -> ScimUser:
    found = scim_users(workspace=workspace).filter(pk=user_id).first()
    if found is None:
        raise ScimError(404, f"User {user_id[:64]} not found.")
    return found


def scim_group_get(*, workspace, group_id: str) -> ScimGroup:
    found = scim_groups(workspace=workspace).filter(pk=group_id).first()
    if found is None:
        raise ScimError(404, f"Group {group_id[:64]} not found.")
    return found
