"""One row per counted key and fixed window."""
from django.db import models


class Counter(models.Model):
    """Events of one key in one window (`rl:<key>:<window start>`), written only by config/ratelimit.py with single
    atomic statements (an upsert that increments and returns the count). Times are epoch seconds."""

    key = models.CharField(max_length=400, unique=True)
    expires_at = models.BigIntegerField(db_index=True, help_text="swept after this (end of the window)")
    count = models.BigIntegerField(default=0)

    def __str__(self):
        return f"{self.key}: {self.count}"
