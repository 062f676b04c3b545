"""The three services' URL spaces (docs/architecture.md)."""
from django.conf import settings
from django.contrib import admin
from django.urls import include, path

from config.schema import OtpSchemaView, PlatformSchemaView, WarehouseSchemaView, schema_routes
from platform_app.api.identity.health import HealthView, jwks_view
from platform_app.api.mcp.mcp import authorization_server_metadata, protected_resource_metadata

# Django tries the patterns in order on every request, and an include under a prefix is skipped in one test when
# the prefix does not match: the APIs' prefixed spaces come first, the pages' unprefixed ones last.
urlpatterns = [
    path("admin/", admin.site.urls),
    path(".well-known/jwks.json", jwks_view, name="jwks"),
    # The MCP endpoint's OAuth metadata (RFC 9728, RFC 8414; platform_app/api/mcp/)
    path(".well-known/oauth-protected-resource", protected_resource_metadata),
    path(".well-known/oauth-protected-resource/v1/mcp", protected_resource_metadata),
    path(".well-known/oauth-authorization-server", authorization_server_metadata),
    # Platform API
    path("health", HealthView.as_view(), name="health"),
    *schema_routes("v1/", PlatformSchemaView, "platform"),
    path("v1/", include("platform_app.api.urls")),
    # OTP API
    *schema_routes("api/v1/", OtpSchemaView, "otp"),
    path("api/v1/", include("otp_app.api.urls")),
    # Warehouse API
    *schema_routes("api/", WarehouseSchemaView, "warehouse"),
    path("api/", include("warehouse_app.api.urls")),
    path("scim/v2/", include("platform_app.api.org.scim_urls")),  # SCIM 2.0 (docs/org.md): its own error schema
    # Pages
    path("dashboard/otp/", include("otp_app.pages.urls")),
    path("warehouses/", include("warehouse_app.pages.urls")),
    path("", include("platform_app.pages.urls")),
]
if settings.BENCH_VIEWS:  # the benchmarks' baselines (bench/harness.py), off unless BENCH_VIEWS is set
    urlpatterns.insert(0, path("bench/", include("config.bench_views")))

handler400 = "config.errors.handler400"
handler404 = "config.errors.handler404"
handler500 = "config.errors.handler500"
