"""A readable name for a facility whose map data has none (pages, and the API's `display_name`)."""

TYPE_LABELS = {
    "warehouse": "Warehouse", "industrial": "Industrial building", "commercial": "Commercial building",
    "storage": "Storage building", "hangar": "Hangar", "manufacture": "Manufacturing building", "depot": "Depot",
    "logistics": "Logistics building", "distribution_center": "Distribution center",
}


def type_label(type_code: str) -> str:
    return TYPE_LABELS.get(type_code) or (type_code or "building").replace("_", " ").capitalize()


def area_label(floor_area_m2: float) -> str:
    """12,400 m² (to the hundred from 1,000 m², to the ten below: footprints are not that precise)."""
    area = floor_area_m2 or 0
    rounded = round(area, -2) if area >= 1000 else round(area, -1)
    return f"{rounded:,.0f} m²"


def facility_display_name(facility) -> str:
    """The name in the data, else "Warehouse, 12,400 m², Glen Burnie" (type, footprint, place)."""
    if facility.name:
        return facility.name
    place = facility.city or facility.region or facility.country
    return ", ".join(part for part in (type_label(facility.type_code), area_label(facility.floor_area_m2), place)
                     if part)
