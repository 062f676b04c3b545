"""A region's map: the outlines of its largest facilities drawn together as one SVG document (docs/warehouse.md).

Drawing one reads and projects up to REGION_MAP_LIMIT outlines: 0.2–0.6 s of CPU and about 9 MiB of Python objects
at its peak. So the maps are drawn where the directory changes, by a job after each refresh of the regions (an
import, a staff change), and shared through the cache; a web process reads a map's bytes once and keeps them
(`directory.region_map_documents`). It draws one itself only when the shared copy is missing or older than the directory.
"""
import gzip
import hashlib
from dataclasses import dataclass

from django.core.cache import cache
from django.template.loader import render_to_string

from warehouse_app.models import DirectoryFacet
from warehouse_app.services import directory, selectors
from warehouse_app.services.maps import region_map as draw


@dataclass(frozen=True)
class RegionMap:
    """A map encoded once, plain and gzipped, with what a page needs to frame it. `version` is the directory's
    (`directory.region_map_documents.shared_version()`) when it was drawn."""
    region: str
    version: str | None
    svg: bytes
    svg_gzip: bytes
    etag: str
    width: int
    height: int
    outlines: int
    limited: bool

    @property
    def size(self) -> int:
        return len(self.svg) + len(self.svg_gzip) + 300


def _shared_key(region: str) -> str:
    """By region in any case; `v1` names RegionMap's fields, so a release that changes them reads none of the old."""
    return "warehouse:region-map:v1:" + hashlib.blake2b(region.casefold().encode(), digest_size=16).hexdigest()


def region_map_draw(*, region: str, version: str | None) -> RegionMap:
    facilities = selectors.region_outlines(region=region)
    drawn = draw(facilities)
    svg = render_to_string("warehouse_app/region_map.svg", {"map": drawn, "region": region}).encode()
    return RegionMap(region=region, version=version, svg=svg, svg_gzip=gzip.compress(svg, compresslevel=9, mtime=0),
                     etag=f'W/"{hashlib.blake2b(svg, digest_size=12).hexdigest()}"', width=drawn["width"],
                     height=drawn["height"], outlines=len(drawn["shapes"]),
                     limited=len(facilities) >= selectors.REGION_MAP_LIMIT)


def region_map(region: str) -> RegionMap | None:
    """The map of a region named in any case; None when no active facility records that region."""
    spelled = next((r["region"] for r in directory.regions() if r["region"].casefold() == region.casefold()), None)
    if not spelled:
        return None

    def shared_or_drawn():
        try:
            version = directory.region_map_documents.shared_version()
            shared = cache.get(_shared_key(spelled))
        except Exception:  # noqa: BLE001 - cache unreachable: draw it here, keep it in this process only
            return region_map_draw(region=spelled, version=None)
        if shared is not None and shared.version == version:
            return shared
        document = region_map_draw(region=spelled, version=version)
        try:
            cache.set(_shared_key(spelled), document, None)
        except Exception:  # noqa: BLE001 - cache gone meanwhile: the next process draws its own
            pass
        return document

    return directory.region_map_documents.get_or_compute(spelled.casefold(), shared_or_drawn, size=lambda m: m.size)


def region_maps_publish() -> int:
    """Draw every region's map as the directory is now and share them (the job after a refresh); how many."""
    version = directory.region_map_documents.shared_version()
    # one map per region, whatever the case of its rows
    regions = {name.casefold(): name for name in DirectoryFacet.objects.filter(kind="region").exclude(region="")
               .values_list("region", flat=True)}
    for name in regions.values():
        cache.set(_shared_key(name), region_map_draw(region=name, version=version), None)
    return len(regions)
