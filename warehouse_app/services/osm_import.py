"""Build or refresh the directory from an OSM extract (`manage.py import_osm`).

One streaming pass of pyosmium's area assembler (it reads the file twice internally: relations,
then ways and nodes) keeps only two things in memory: warehouse-like building outlines and named
administrative boundaries. Everything else is looked at once and dropped.
"""
from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import osmium
import shapely.wkb
from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.text import slugify
from pyproj import Transformer
from shapely.geometry import mapping
from shapely.ops import transform
from shapely.strtree import STRtree

from warehouse_app.models import Facility, ImportRun
from warehouse_app.services.directory import facets_refresh, facilities_analyze


def classify(tags) -> tuple[str | None, str]:
    """(type code, '') for a warehouse-like building, else (None, reason skipped)."""
    building = tags.get("building")
    if not building or building == "no":
        return None, "not_a_building"
    if tags.get("industrial") == "warehouse" or tags.get("landuse") == "warehouse":
        return "warehouse", ""
    if building in settings.WAREHOUSE_BUILDING_TYPES:
        return building, ""
    return None, "not_warehouse_like"


@lru_cache(maxsize=4096)
def _equal_area(lat: float, lon: float) -> Transformer:
    """Lambert azimuthal equal-area centred near the building (cached on a 0.1° grid)."""
    return Transformer.from_crs("EPSG:4326", f"+proj=laea +lat_0={lat} +lon_0={lon} +datum=WGS84 +units=m",
                                always_xy=True)


def floor_area_m2(geom) -> float:
    """Footprint in m², measured in an equal-area projection centred on the building."""
    c = geom.centroid
    return transform(_equal_area(round(c.y, 1), round(c.x, 1)).transform, geom).area


@dataclass
class Candidate:
    osm_type: str
    osm_id: int
    type_code: str
    tags: dict
    geom: object
    area: float


@dataclass
class Boundary:
    level: int
    name: str
    geom: object


@dataclass
class Summary:
    kept: int = 0
    created: int = 0
    updated: int = 0
    withdrawn: int = 0
    skipped: Counter = field(default_factory=Counter)


def _read(path: Path, progress) -> tuple[list[Candidate], list[Boundary], Counter]:
    """Stream the file once; keep only candidates above the minimum area and named admin boundaries."""
    wkb = osmium.geom.WKBFactory()
    candidates, boundaries, skipped = [], [], Counter()
    seen = 0
    for obj in osmium.FileProcessor(str(path)).with_locations().with_areas():
        if not obj.is_area():
            continue
        seen += 1
        if seen % 5000 == 0:
            progress(f"  {seen} areas read, {len(candidates)} kept so far")
        tags = obj.tags
        if tags.get("boundary") == "administrative" and tags.get("name") and (tags.get("admin_level") or "").isdigit():
            try:
                geom = shapely.wkb.loads(wkb.create_multipolygon(obj), hex=True)
            except RuntimeError:
                continue  # a boundary cut off at the extract's edge
            boundaries.append(Boundary(int(tags["admin_level"]), tags["name"], geom))
            continue
        type_code, reason = classify(tags)
        if type_code is None:
            if reason != "not_a_building":
                skipped[reason] += 1
            continue
        try:
            geom = shapely.wkb.loads(wkb.create_multipolygon(obj), hex=True)
        except RuntimeError:
            skipped["invalid_geometry"] += 1
            continue
        if not geom.is_valid:
            geom = geom.buffer(0)
        area = floor_area_m2(geom)
        if area < settings.WAREHOUSE_MIN_AREA_M2:
            skipped["below_min_area"] += 1
            continue
        candidates.append(Candidate("way" if obj.from_way() else "relation", obj.orig_id(), type_code,
                                    {t.k: t.v for t in tags}, geom, area))
    return candidates, boundaries, skipped


def _places(candidates, boundaries):
    """city, region, country per candidate from the enclosing boundaries (smallest first)."""
    tree = STRtree([b.geom for b in boundaries]) if boundaries else None
    for cand in candidates:
        point = cand.geom.representative_point()
        enclosing = []
        if tree is not None:
            enclosing = sorted((boundaries[i] for i in tree.query(point, predicate="within")), key=lambda b: -b.level)
        city = cand.tags.get("addr:city") or next((b.name for b in enclosing if b.level >= 7), "")
        region = next((b.name for b in enclosing if b.level == 4), "") or next(
            (b.name for b in enclosing if 5 <= b.level <= 6), "")
        country = next((b.name for b in enclosing if b.level == 2), "") or cand.tags.get("addr:country", "")
        yield cand, city, region, country


def _slug(cand: Candidate, city: str) -> str:
    """Readable and stable: the name (else type and city) plus the OSM id, which keeps it unique."""
    base = slugify(cand.tags.get("name") or f"{cand.type_code} {city}".strip())[:80] or cand.type_code
    return f"{base}-{cand.osm_id}" if cand.osm_type == "way" else f"{base}-r{cand.osm_id}"


def osm_import(*, path: Path, region: str = "", country: str = "", progress=print) -> Summary:
    """Create or update facilities by OSM id; withdraw those of this file that left the extract."""
    started = time.monotonic()
    run = ImportRun.objects.create(source_file=path.name)
    progress(f"Reading {path.name} ...")
    candidates, boundaries, skipped = _read(path, progress)
    progress(f"  {len(candidates)} warehouse-like buildings, {len(boundaries)} named admin boundaries")
    summary = Summary(skipped=skipped)
    now = timezone.now()
    with transaction.atomic():
        # rows locked so that an operator claim or a second import cannot interleave with this refresh
        ids = [c.osm_id for c in candidates]
        existing = {}
        for start in range(0, len(ids), 10_000):  # SQLite caps the variables of one statement
            existing.update({(f.osm_type, f.osm_id): f for f in Facility.objects.select_for_update().filter(
                osm_id__in=ids[start:start + 10_000])})
        seen = set()
        for cand, city, reg, ctry in _places(candidates, boundaries):
            c = cand.geom.centroid
            values = dict(name=cand.tags.get("name", "")[:200], type_code=cand.type_code,
                          operator=cand.tags.get("operator", "")[:200], city=city[:120],
                          region=(region or reg)[:120], country=(country or ctry)[:120],
                          floor_area_m2=round(cand.area, 1), lat=round(c.y, 7), lon=round(c.x, 7),
                          outline=mapping(cand.geom), tags=cand.tags, status=Facility.Status.ACTIVE,
                          source_file=path.name, imported_at=now, withdrawn_at=None)
            current = existing.get((cand.osm_type, cand.osm_id))
            if current is None:
                Facility.objects.create(slug=_slug(cand, city), osm_type=cand.osm_type, osm_id=cand.osm_id,
                                        **values)
                summary.created += 1
            else:
                if current.operator and not values["operator"]:
                    values["operator"] = current.operator  # an operator account's claim survives re-imports
                for key, value in values.items():
                    setattr(current, key, value)
                current.save()
                summary.updated += 1
            seen.add((cand.osm_type, cand.osm_id))
        summary.kept = len(seen)
        gone = [f.pk for f in Facility.objects.filter(source_file=path.name, status=Facility.Status.ACTIVE)
                if (f.osm_type, f.osm_id) not in seen]
        summary.withdrawn = Facility.objects.filter(pk__in=gone).update(status=Facility.Status.WITHDRAWN,
                                                                         withdrawn_at=now)
        # regions, cities, types and operators change only here (and on a claim): computed once, not per request
        facets_refresh()
        run.finished_at = timezone.now()
        run.kept, run.created, run.updated, run.withdrawn = summary.kept, summary.created, summary.updated, summary.withdrawn
        run.skipped = dict(summary.skipped)
        run.save()
    facilities_analyze()  # the search's plans and count estimates follow the new data
    progress(f"Done in {time.monotonic() - started:.1f}s: kept {summary.kept} (created {summary.created}, "
             f"updated {summary.updated}), withdrawn {summary.withdrawn}, skipped "
             + ", ".join(f"{k} {v}" for k, v in sorted(summary.skipped.items())))
    return summary
