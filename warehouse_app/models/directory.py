"""The facility directory, built from OpenStreetMap building outlines by `import_osm`."""
from django.db import models
from django.utils import timezone

__all__ = ("Facility", "ImportRun")


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
    type_code = models.CharField(max_length=32, db_index=True)
    operator = models.CharField(max_length=200, blank=True, db_index=True,
                                help_text="the OSM operator tag, else the name of the operator account that claims it")
    city = models.CharField(max_length=120, blank=True, db_index=True)
    region = models.CharField(max_length=120, blank=True, db_index=True)
    country = models.CharField(max_length=120, blank=True, db_index=True)
    floor_area_m2 = models.FloatField(db_index=True)
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

    def __str__(self):
        return self.slug


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
