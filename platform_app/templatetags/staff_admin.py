"""The Django admin index's overview: the staff selectors' numbers, the same as `GET /v1/admin/overview`."""
from django import template

from platform_app.services.staff import selectors

register = template.Library()


@register.simple_tag
def staff_overview() -> dict:
    return selectors.overview()


@register.simple_tag
def staff_tiers() -> dict:
    return selectors.tiers()
