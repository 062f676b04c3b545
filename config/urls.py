"""The three services' URL spaces (docs/architecture.md)."""
from django.contrib import admin
from django.urls import include, path

from config.schema import OtpSchemaView, PlatformSchemaView, WarehouseSchemaView, schema_routes
from platform_app.api.health import HealthView, jwks_view

urlpatterns = [
    path("admin/", admin.site.urls),
    path(".well-known/jwks.json", jwks_view, name="jwks"),
    # Platform
    path("health", HealthView.as_view(), name="health"),
    *schema_routes("v1/", PlatformSchemaView, "platform"),
    path("v1/", include("platform_app.api.urls")),
    # OTP
    *schema_routes("api/v1/", OtpSchemaView, "otp"),
    path("api/v1/", include("otp_app.urls")),
    path("dashboard/otp/", include("otp_app.console_urls")),
    path("", include("platform_app.urls")),
    # Warehouse
    *schema_routes("api/", WarehouseSchemaView, "warehouse"),
    path("api/", include("warehouse_app.urls")),
    path("", include("warehouse_app.pages_urls")),
]

handler404 = "config.errors.handler404"
handler500 = "config.errors.handler500"
