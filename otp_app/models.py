"""One-time codes: keys, records, deliveries, idempotency, balance, sandbox, routing."""
from django.db import models
from django.utils import timezone

from config.ids import PrefixedIdField

CHANNELS = ("whatsapp", "sms", "email", "console")


class ApiKey(models.Model):
    """A bearer key `svc_live_...` / `svc_test_...` of a workspace, stored as a SHA-256 hash."""

    class Mode(models.TextChoices):
        LIVE = "live"
        TEST = "test"

    id = PrefixedIdField(prefix="key")
    workspace = models.ForeignKey("platform_app.Workspace", on_delete=models.CASCADE, related_name="otp_keys")
    name = models.CharField(max_length=100, blank=True)
    mode = models.CharField(max_length=8, choices=Mode.choices)
    prefix = models.CharField(max_length=20)
    key_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    # Phone number types refused by default (otp_app/services/number_types.py) that staff allow for this key.
    allowed_number_types = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ("-created_at",)
        verbose_name = "OTP API key"

    def __str__(self):
        return f"{self.prefix}… ({self.workspace})"


class OtpRecord(models.Model):
    """One code's life: sent → verified | expired | failed | undeliverable. The code itself is
    never stored, only HMAC-SHA256(secret, id:code)."""

    class Status(models.TextChoices):
        SENT = "sent"
        VERIFIED = "verified"
        EXPIRED = "expired"
        FAILED = "failed"
        UNDELIVERABLE = "undeliverable"

    id = PrefixedIdField(prefix="otp")
    api_key = models.ForeignKey(ApiKey, on_delete=models.CASCADE, related_name="records", db_index=False)
    workspace = models.ForeignKey("platform_app.Workspace", on_delete=models.CASCADE, related_name="otp_records",
                                  db_index=False)
    mode = models.CharField(max_length=8, choices=ApiKey.Mode.choices)
    recipient = models.CharField(max_length=254)
    locale = models.CharField(max_length=35, default="en", help_text="BCP 47 (messages.TAG_MAX)")
    channel = models.CharField(max_length=16, help_text="channel of the latest delivery attempt")
    route = models.JSONField(default=list, help_text="channels to try, in order")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.SENT)
    code_hash = models.CharField(max_length=64)
    attempts_left = models.PositiveSmallIntegerField()
    sends = models.PositiveSmallIntegerField(default=1)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    last_sent_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    verified_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ("-created_at",)
        # Every send writes a record, so it carries only the indexes a query uses (docs/otp.md, "Indexes"):
        # the expiry sweep, the failed-records rule, a workspace's list, the key's cascade.
        indexes = [models.Index(fields=["status", "expires_at"]), models.Index(fields=["recipient", "status"]),
                   models.Index(fields=["workspace", "created_at", "id"], name="otp_record_workspace_list"),
                   models.Index(fields=["api_key"], name="otp_record_api_key")]
        verbose_name = "OTP record"

    def __str__(self):
        return self.id


class Delivery(models.Model):
    """One attempt to carry a code over one channel."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        SENT = "sent"
        DELIVERED = "delivered"
        FAILED = "failed"

    record = models.ForeignKey(OtpRecord, on_delete=models.CASCADE, related_name="deliveries", db_index=False)
    send_number = models.PositiveSmallIntegerField(help_text="which send of the record (1 = first, 2+ = resends)")
    channel = models.CharField(max_length=16)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    provider_message_id = models.CharField(max_length=100, blank=True)
    error = models.CharField(max_length=500, blank=True)
    tries = models.PositiveSmallIntegerField(default=0)
    # The code, sealed (otp_app/services/codes.py), from the commit that queues the delivery until a drain claims
    # it (otp_app/services/drain.py): the row is the job. Empty once claimed, and for a retry or a fallback,
    # whose job message carries the sealed code instead.
    sealed_code = models.TextField(blank=True, default="")
    # A live delivery's price, taken off the balance when it was queued (otp_app/services/balance.py) and not yet
    # charged or given back.
    reserved = models.BigIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ("created_at", "pk")
        verbose_name_plural = "deliveries"
        # only the rows waiting for a drain: a claim reads a few index entries, however large the table grows
        indexes = [models.Index(fields=["id"], condition=~models.Q(sealed_code=""), name="otp_delivery_pending"),
                   models.Index(fields=["record"], name="otp_delivery_record"),
                   models.Index(fields=["provider_message_id"], name="otp_delivery_provider_id")]

    def __str__(self):
        return f"{self.record_id} via {self.channel}: {self.status}"


class IdempotencyKey(models.Model):
    """The first response to an `idempotency-key`, per API key; the unique constraint is what makes
    two concurrent sends with one key produce one message."""

    api_key = models.ForeignKey(ApiKey, on_delete=models.CASCADE, related_name="+", db_index=False)
    key = models.UUIDField()
    request_hash = models.CharField(max_length=64)
    record = models.ForeignKey(OtpRecord, on_delete=models.CASCADE, related_name="+", db_index=False)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        # the unique constraint also serves the key's lookups and cascade (api_key leads it)
        constraints = [models.UniqueConstraint(fields=["api_key", "key"], name="otp_idempotency_unique")]
        indexes = [models.Index(fields=["record"], name="otp_idempotency_record")]


class Balance(models.Model):
    """One purse of a workspace's prepaid live balance, in minor units: the balance is the sum of its purses
    (`OTP_BALANCE_PURSES`, otp_app/services/balance.py), so sends running at once hold their prices on different
    rows instead of queueing for one. Purse 0 always exists and carries the currency."""

    workspace = models.ForeignKey("platform_app.Workspace", on_delete=models.CASCADE, related_name="otp_balances",
                                  db_index=False)  # the unique (workspace, purse) serves it
    purse = models.PositiveSmallIntegerField(default=0)
    currency = models.CharField(max_length=3, default="USD")
    amount = models.BigIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["workspace", "purse"], name="otp_balance_purse_unique")]

    def __str__(self):
        return f"{self.workspace}: purse {self.purse}, {self.amount} {self.currency}"


class Charge(models.Model):
    """One accepted live delivery, charged once (unique per delivery). A row is written for every live send, so it
    has one index besides its keys: the month's consumption of a workspace (and a workspace's deletion) reads it."""

    workspace = models.ForeignKey("platform_app.Workspace", on_delete=models.CASCADE, related_name="otp_charges",
                                  db_index=False)
    delivery = models.OneToOneField(Delivery, on_delete=models.CASCADE, related_name="charge")
    channel = models.CharField(max_length=16)
    amount = models.BigIntegerField()
    currency = models.CharField(max_length=3)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["workspace", "created_at"], name="otp_charge_workspace_month")]


class SandboxMessage(models.Model):
    """What a test key's send would have delivered, kept for the sandbox outbox."""

    api_key = models.ForeignKey(ApiKey, on_delete=models.CASCADE, related_name="sandbox_messages", db_index=False)
    record = models.ForeignKey(OtpRecord, on_delete=models.CASCADE, related_name="+", db_index=False)
    channel = models.CharField(max_length=16)
    recipient = models.CharField(max_length=254)
    text = models.TextField()
    code = models.CharField(max_length=6)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ("-created_at", "-pk")
        # a key's outbox, newest first, and a workspace's month through its keys
        indexes = [models.Index(fields=["api_key", "created_at", "id"], name="otp_sandbox_key_outbox"),
                   models.Index(fields=["record"], name="otp_sandbox_record")]


class RoutingRule(models.Model):
    """Per-workspace channel order for a recipient country (`*` = any)."""

    workspace = models.ForeignKey("platform_app.Workspace", on_delete=models.CASCADE, related_name="otp_routes")
    country = models.CharField(max_length=2, help_text="ISO 3166 alpha-2, or * for any")
    channels = models.JSONField(help_text='ordered list, e.g. ["whatsapp", "sms"]')

    class Meta:
        constraints = [models.UniqueConstraint(fields=["workspace", "country"], name="otp_route_unique_country")]

    def __str__(self):
        return f"{self.workspace} {self.country}: {' → '.join(self.channels)}"


class WorkspacePolicy(models.Model):
    """Geo permissions: the countries a workspace may send to (empty = all)."""

    workspace = models.OneToOneField("platform_app.Workspace", on_delete=models.CASCADE, related_name="otp_policy")
    allowed_countries = models.JSONField(default=list, blank=True)

    class Meta:
        verbose_name_plural = "workspace policies"

    def __str__(self):
        return f"{self.workspace}: {', '.join(self.allowed_countries) or 'all countries'}"
