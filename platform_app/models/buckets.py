"""Buckets: S3-compatible object storage a project owns, on the platform's endpoint (docs/buckets.md)."""
from django.db import models
from django.db.models import Q
from django.utils.timezone import now

from config.ids import PrefixedIdField

__all__ = ("Bucket",)


class Bucket(models.Model):
    """A bucket at BUCKETS_S3_ENDPOINT and the IAM user whose key reaches only it. The row is written before
    the bucket exists (`creating`), so its unique name is what keeps two requests from making one bucket twice;
    a bucket whose project was deleted loses its project and is emptied and removed by `buckets_reap`.
    The secret access key is Fernet-encrypted with the env var keys (builds and instances get it)."""

    class Status(models.TextChoices):
        CREATING = "creating"
        READY = "ready"
        DELETING = "deleting"

    id = PrefixedIdField(prefix="bkt")
    project = models.ForeignKey("platform_app.Project", null=True, blank=True, on_delete=models.SET_NULL,
                                related_name="buckets", help_text="null: its project was deleted (reaped soon)")
    label = models.CharField(max_length=63, help_text="the name asked for; prefixes its variables")
    name = models.CharField(max_length=63, unique=True, help_text="the bucket's name at the endpoint")
    endpoint = models.CharField(max_length=500)
    region = models.CharField(max_length=64)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.CREATING, db_index=True)
    made = models.BooleanField(default=False, help_text="the bucket exists at the endpoint because of this row")
    iam_user = models.CharField(max_length=64, blank=True)
    access_key_id = models.CharField(max_length=128, blank=True)
    secret_encrypted = models.TextField(blank=True)
    objects_count = models.BigIntegerField(default=0, help_text="objects at the last measure")
    bytes = models.BigIntegerField(default=0, help_text="bytes at the last measure")
    measured_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=now)

    class Meta:
        ordering = ("-created_at",)
        constraints = [
            models.CheckConstraint(condition=Q(objects_count__gte=0) & Q(bytes__gte=0), name="bucket_usage_positive"),
        ]

    def __str__(self):
        return self.name
