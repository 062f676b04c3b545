"""`{{ facility|display_name }}`, `{{ page|facility_rows }}` and `{{ price|money:currency }}` for the warehouse
pages."""
from decimal import ROUND_HALF_UP, Decimal
from html import escape

from django import template
from django.urls import reverse
from django.utils.safestring import mark_safe

from warehouse_app.services.naming import facility_display_name
from warehouse_app.services.quotes import quote_unit_mismatch

register = template.Library()


@register.filter
def display_name(facility) -> str:
    return facility_display_name(facility)


@register.filter
def facility_rows(page) -> str:
    """The table rows of a results page, written here rather than by a template loop (which spent two thirds of
    a search page's time resolving variables, a `{% url %}` and two number filters per cell). A results page is
    kept until the directory changes (services/directory.py), and so are its rows' HTML, made on first use."""
    html = getattr(page, "rows_html", None)
    if html is None:
        link = reverse("warehouses-facility", args=["-"])[:-2]  # the prefix every facility's address shares
        html = page.rows_html = "".join(
            f'<tr><td data-label="Facility"><a href="{link}{escape(f.slug)}/">{escape(facility_display_name(f))}</a>'
            f'</td><td data-label="Type">{escape(f.type_code)}</td>\n<td data-label="City">{escape(f.city or "—")}'
            f'</td><td data-label="Region">{escape(f.region or "—")}</td><td data-label="Floor area">'
            f'{_whole(f.floor_area_m2):,} m²</td></tr>\n' for f in page.rows)
    return mark_safe(html)  # every value above is escaped


def _whole(number: float) -> int:
    """Rounded as `floatformat:0` rounds (half up)."""
    return int(Decimal(repr(float(number))).quantize(Decimal(1), rounding=ROUND_HALF_UP))


@register.filter
def money(minor, currency="") -> str:
    """Minor units as an amount: 1250, "USD" → "12.50 USD"."""
    if minor is None:
        return "—"
    return f"{minor / 100:,.2f} {currency}".strip()


@register.filter
def unit_mismatch(quote) -> dict | None:
    """The quote's {requested, quoted, note} when it is priced in another unit than requested."""
    return quote_unit_mismatch(quote)
