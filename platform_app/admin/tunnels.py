"""Admin of tunnels, their connections and relay rows (docs/tunnel.md). Read-only: tunnels are started and stopped
through their services (a token is made once and never shown here); connections and relay rows belong to the web
processes holding them."""
from django.contrib import admin

from platform_app.admin.base import ThroughServicesAdmin
from platform_app.models import Tunnel, TunnelConnection, TunnelRequest


@admin.register(Tunnel)
class TunnelAdmin(ThroughServicesAdmin):
    list_display = ("project", "started_at", "stopped_at", "bytes_in", "bytes_out", "created_at")
    search_fields = ("project__slug",)
    list_select_related = ("project",)
    exclude = ("token_hash",)


@admin.register(TunnelConnection)
class TunnelConnectionAdmin(ThroughServicesAdmin):
    list_display = ("tunnel", "holder", "client_ip", "opened_at", "last_seen_at")
    search_fields = ("tunnel__project__slug", "holder")
    list_select_related = ("tunnel__project",)
    exclude = ("token_hash",)


@admin.register(TunnelRequest)
class TunnelRequestAdmin(ThroughServicesAdmin):
    list_display = ("pk", "connection", "created_at", "claimed_at", "answered_at")
    list_select_related = ("connection__tunnel__project",)
    exclude = ("frame", "answer")
