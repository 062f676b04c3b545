"""The facility directory, built from OpenStreetMap building outlines by `import_osm`."""
from django.db import models
from django.db.models import F, Q
from django.db.models.functions import Upper
from django.utils import timezone

__all__ = ("DirectoryFacet", "Facility", "ImportRun")

# Search filters compare case-insensitively (`__iexact`, i.e. UPPER(col) = UPPER(value) on PostgreSQL).
SEARCH_FIELDS = ("type_code", "region", "country", "city", "operator")


def _search_indexes():
    """The default search order (floor area, largest first, then slug) over active facilities, and the same
    order behind each case-insensitive filter: a search page is a range of one index, never a sort.
    The filter indexes are not partial: PostgreSQL keeps statistics on an index expression only for whole-table
    indexes, and the search's count estimate comes from the planner. Trigram indexes for `q` are PostgreSQL-only
    and live in migration 0003 (no model state)."""
    order = (F("floor_area_m2").desc(), F("slug"))
    return [models.Index(*order, condition=Q(status="active"), name="facility_search_order"),
            *(models.Index(Upper(field), *order, name=f"facility_{field}_search") for field in SEARCH_FIELDS)]


class Facility(models.Model):
    """One warehouse-like building from OSM. Never deleted: withdrawn when it leaves the extract,
    so quotes and bookings keep pointing at it."""

    class Status(models.TextChoices):
        ACTIVE = "active"
        WITHDRAWN = "withdrawn"

    slug = models.SlugField(max_length=120, unique=True)
    osm_type = models.CharField(max_length=8, default="way", help_text="way, or relation for multipolygons")
    osm_id = models.BigIntegerField()
    name = models.CharField(max_length=200, blank=True)
    type_code = models.CharField(max_length=32)
    operator = models.CharField(max_length=200, blank=True,
                                help_text="the OSM operator tag, else the name of the operator account that claims it")
    city = models.CharField(max_length=120, blank=True)
    region = models.CharField(max_length=120, blank=True)
    country = models.CharField(max_length=120, blank=True)
    floor_area_m2 = models.FloatField()
    lat = models.FloatField()
    lon = models.FloatField()
    outline = models.JSONField(help_text="GeoJSON Polygon or MultiPolygon geometry (lon, lat)")
    tags = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE, db_index=True)
    source_file = models.CharField(max_length=200, blank=True)
    imported_at = models.DateTimeField(default=timezone.now)
    withdrawn_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ("slug",)
        verbose_name_plural = "facilities"
        constraints = [models.UniqueConstraint(fields=["osm_type", "osm_id"], name="facility_unique_osm_object")]
        indexes = _search_indexes()

    def __str__(self):
        return self.slug


class DirectoryFacet(models.Model):
    """One group of active facilities, recomputed at import (and when an operator claims a facility), so the
    region, city, type and operator lists and the "does any facility record this field" checks never
    aggregate the facility table per request. Region rows group by (country, region), city rows by
    (country, region, city) and leave out facilities without a city, type rows by type code, operator rows by
    operator and leave out facilities without one; the other columns of a row are blank."""

    class Kind(models.TextChoices):
        REGION = "region"
        CITY = "city"
        TYPE = "type"
        OPERATOR = "operator"

    kind = models.CharField(max_length=16, choices=Kind.choices)
    country = models.CharField(max_length=120, blank=True)
    region = models.CharField(max_length=120, blank=True)
    city = models.CharField(max_length=120, blank=True)
    type_code = models.CharField(max_length=32, blank=True)
    operator = models.CharField(max_length=200, blank=True)
    facility_count = models.PositiveIntegerField()
    floor_area_m2 = models.FloatField()

    class Meta:
        indexes = [models.Index(fields=["kind", "country", "region", "city"], name="facet_kind_place")]

    def __str__(self):
        return f"{self.kind} {self.country}/{self.region}/{self.city}{self.type_code}{self.operator}"


class ImportRun(models.Model):
    """One `import_osm` run: what /api/health reports as the dataset's import time."""

    source_file = models.CharField(max_length=200)
    started_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)
    kept = models.PositiveIntegerField(default=0)
    created = models.PositiveIntegerField(default=0)
    updated = models.PositiveIntegerField(default=0)
    withdrawn = models.PositiveIntegerField(default=0)
    skipped = models.JSONField(default=dict, help_text="reason → count")

    class Meta:
        ordering = ("-started_at",)

    def __str__(self):
        return f"{self.source_file} at {self.started_at:%Y-%m-%d %H:%M}"
