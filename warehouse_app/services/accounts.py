"""Warehouse accounts and roles."""
from django.db import transaction

from config.errors import NotFound
from warehouse_app.models import Facility, OperatorFacility, WarehouseProfile
from warehouse_app.services.directory import facets_refresh


def profile_of(user) -> WarehouseProfile:
    profile, _ = WarehouseProfile.objects.get_or_create(user=user)
    return profile


def role_of(user) -> str:
    if not getattr(user, "is_authenticated", False):
        return "anonymous"
    profile = WarehouseProfile.objects.filter(user=user).only("role").first()
    return profile.role if profile else WarehouseProfile.Role.CUSTOMER


def operated_facilities(user):
    """Facilities whose quotes this account answers: all for an owner, its links for an operator."""
    role = role_of(user)
    if role == WarehouseProfile.Role.OWNER:
        return Facility.objects.all()
    if role == WarehouseProfile.Role.OPERATOR:
        return Facility.objects.filter(operator_links__user=user)
    return Facility.objects.none()


@transaction.atomic
def role_set(*, user, role: str, facility_slugs: list[str] = ()) -> WarehouseProfile:
    """Set a role; an operator is linked to the facilities it answers for. A facility without an OSM
    operator tag takes the operator account's name."""
    if role not in WarehouseProfile.Role.values:
        raise ValueError(f"role must be one of {', '.join(WarehouseProfile.Role.values)}")
    profile = profile_of(user)
    profile.role = role
    profile.save(update_fields=["role"])
    named = False
    for slug in facility_slugs:
        facility = Facility.objects.filter(slug=slug).first()
        if facility is None:
            raise NotFound(f"No facility {slug!r}.")
        OperatorFacility.objects.get_or_create(user=user, facility=facility)
        if not facility.operator:
            facility.operator = user.name or user.email
            facility.save(update_fields=["operator"])
            named = True
    if named:
        facets_refresh(kinds=("operator",))  # /api/operators and the operator filter read the facets
    return profile
