"""Reading the directory: the search filters, aggregates and what could not be applied."""
from django.db.models import Count, Q, Sum

from warehouse_app.models import Facility

FILTERS = ("region", "country", "city", "type", "operator", "min_area", "max_area", "q")
PAGING = ("page", "page_size")
FIELD = {"region": "region", "country": "country", "city": "city", "type": "type_code", "operator": "operator"}


def active():
    """Facilities still in the map data (withdrawn ones keep only their own page)."""
    return Facility.objects.filter(status=Facility.Status.ACTIVE)


def facilities_search(params) -> tuple:
    """(queryset, unapplied) — every parameter either narrows the search or is named with a reason."""
    qs, unapplied = active(), []
    for name in params:
        if name not in FILTERS and name not in PAGING:
            unapplied.append({"name": name, "reason": "unknown filter"})
    for name, field in FIELD.items():
        value = (params.get(name) or "").strip()
        if not value:
            continue
        if not active().exclude(**{field: ""}).exists():
            unapplied.append({"name": name, "reason": f"no facility records a {name}"})
            continue
        qs = qs.filter(**{f"{field}__iexact": value})
    for name, lookup in (("min_area", "floor_area_m2__gte"), ("max_area", "floor_area_m2__lte")):
        raw = (params.get(name) or "").strip()
        if not raw:
            continue
        try:
            value = float(raw)
            if value < 0 or value != value:
                raise ValueError
        except ValueError:
            unapplied.append({"name": name, "reason": "not a non-negative number of square metres"})
            continue
        qs = qs.filter(**{lookup: value})
    q = (params.get("q") or "").strip()
    if q:
        qs = qs.filter(Q(name__icontains=q) | Q(city__icontains=q) | Q(operator__icontains=q) | Q(slug__icontains=q))
    # outlines and raw tags are only shown on a facility's own page: lists do not load them
    return qs.defer("outline", "tags").order_by("-floor_area_m2", "slug"), unapplied


def regions():
    return (active().values("country", "region").annotate(facility_count=Count("id"),
                                                          floor_area_m2=Sum("floor_area_m2"))
            .order_by("country", "region"))


def facility_types():
    return active().values("type_code").annotate(facility_count=Count("id")).order_by("type_code")


def cities():
    return (active().exclude(city="").values("city", "region", "country").annotate(facility_count=Count("id"))
            .order_by("country", "city"))


def operators():
    return active().exclude(operator="").values("operator").annotate(facility_count=Count("id")).order_by("operator")
