"""The tunnel: a project's address `<slug>-tunnel.<DEPLOY_DOMAIN>` served by a developer's machine
(docs/tunnel.md). A `Tunnel` per project once started, a `TunnelConnection` per open WebSocket of
`manage.py tunnel`, and `TunnelRequest`, the relay rows that carry requests between processes without Redis."""
from django.db import models
from django.db.models import Q
from django.utils.timezone import now

from config.ids import PrefixedIdField

__all__ = ("Tunnel", "TunnelConnection", "TunnelRequest")


class Tunnel(models.Model):
    """A project's tunnel. Started: `token_hash` holds the SHA-256 of the client's token (shown once; a new start
    replaces it). Stopped: no token, so no client can connect. The byte counters count since the last start."""

    id = PrefixedIdField(prefix="tun")
    project = models.OneToOneField("platform_app.Project", on_delete=models.CASCADE, related_name="tunnel")
    token_hash = models.CharField(max_length=64, blank=True, help_text="empty: stopped")
    started_at = models.DateTimeField(null=True, blank=True)
    stopped_at = models.DateTimeField(null=True, blank=True)
    bytes_in = models.BigIntegerField(default=0, help_text="request bodies forwarded to the client")
    bytes_out = models.BigIntegerField(default=0, help_text="answer bodies the client sent back")
    created_at = models.DateTimeField(default=now)

    class Meta:
        ordering = ("-created_at",)
        constraints = [
            models.UniqueConstraint(fields=["token_hash"], condition=~Q(token_hash=""), name="tunnel_unique_token"),
            models.CheckConstraint(condition=Q(bytes_in__gte=0) & Q(bytes_out__gte=0), name="tunnel_bytes_positive"),
        ]

    def __str__(self):
        return f"{self.project} tunnel"


class TunnelConnection(models.Model):
    """One open WebSocket of a client, held by one web process (`holder`), which renews `last_seen_at` every
    TUNNEL_HEARTBEAT_SECONDS; older than TUNNEL_CONNECTION_TTL_SECONDS it no longer counts (its process died).
    `token_hash` is the token it connected with: a stop or a new start leaves it behind, and its holder closes."""

    id = PrefixedIdField(prefix="tcn")
    tunnel = models.ForeignKey(Tunnel, on_delete=models.CASCADE, related_name="connections")
    token_hash = models.CharField(max_length=64)
    holder = models.CharField(max_length=200, help_text="host:pid of the web process holding the WebSocket")
    client_ip = models.GenericIPAddressField(null=True, blank=True)
    opened_at = models.DateTimeField(default=now)
    last_seen_at = models.DateTimeField(default=now)

    class Meta:
        ordering = ("-opened_at",)
        indexes = [models.Index(fields=["tunnel", "last_seen_at"])]

    def __str__(self):
        return f"{self.tunnel} via {self.holder}"


class TunnelRequest(models.Model):
    """A request on its way through the database relay (no Redis): the edge writes `frame` and waits for
    `answer`; the connection's holder claims it, forwards it over the WebSocket and writes the answer. The edge
    deletes the row when it is done; the beat task `tunnels_prune` removes what a dead process left."""

    id = PrefixedIdField(prefix="trq")
    connection = models.ForeignKey(TunnelConnection, on_delete=models.CASCADE, related_name="requests")
    frame = models.BinaryField(help_text="the request: JSON head and body (docs/tunnel.md, frames)")
    claimed_at = models.DateTimeField(null=True, blank=True)
    answer = models.BinaryField(null=True, blank=True)
    answered_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=now)

    class Meta:
        ordering = ("created_at",)
        indexes = [models.Index(fields=["connection", "claimed_at"])]

    def __str__(self):
        return self.pk
