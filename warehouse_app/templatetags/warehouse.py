"""`{{ facility|display_name }}` and `{{ price|money:currency }}` for the warehouse pages."""
from django import template

from warehouse_app.services.naming import facility_display_name

register = template.Library()


@register.filter
def display_name(facility) -> str:
    return facility_display_name(facility)


@register.filter
def money(minor, currency="") -> str:
    """Minor units as an amount: 1250, "USD" → "12.50 USD"."""
    if minor is None:
        return "—"
    return f"{minor / 100:,.2f} {currency}".strip()
