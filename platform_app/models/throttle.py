"""Attempt counters for secrets (passwords, MFA codes): one row per key and fixed window."""
from django.db import models

__all__ = ("AttemptCounter",)


class AttemptCounter(models.Model):
    """Attempts of one key (`signin:pair:<email>|<address>`, `mfa:acct:<user>`, ...) in one fixed window.

    Written only by `platform_app.services.identity.throttle` with single atomic statements (an upsert that counts
    and decides at once), so concurrent attempts can never pass the limit. Times are epoch seconds.
    """

    key = models.CharField(max_length=400)
    window_start = models.BigIntegerField()
    expires_at = models.BigIntegerField(db_index=True, help_text="swept after this (end of the window)")
    count = models.PositiveIntegerField(default=0)
    slowed = models.PositiveIntegerField(default=0, help_text="attempts let through past the limit")
    not_before = models.FloatField(null=True, blank=True, help_text="earliest next attempt past the limit")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["key", "window_start"], name="attempt_counter_key_window")]

    def __str__(self):
        return f"{self.key} @{self.window_start}: {self.count}"
