"""One OpenAPI document per service, each listing only its own paths."""
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView


def platform_paths(endpoints, **kwargs):
    return [e for e in endpoints if e[0] == "/health" or e[0].startswith("/v1/")]


def otp_paths(endpoints, **kwargs):
    return [e for e in endpoints if e[0].startswith("/api/v1/")]


def warehouse_paths(endpoints, **kwargs):
    return [e for e in endpoints if e[0].startswith("/api/") and not e[0].startswith("/api/v1/")]


class PlatformSchemaView(SpectacularAPIView):
    custom_settings = {
        "TITLE": "Deployment Platform API",
        "VERSION": "0.1.0",
        "DESCRIPTION": "Workspaces, projects, deployments. Bearer API tokens (`svc_...`) or access JWTs; "
                       "each operation states its required scope (`x-required-scope`).",
        "PREPROCESSING_HOOKS": ["config.schema.platform_paths"],
        "APPEND_COMPONENTS": {"securitySchemes": {
            "bearerAuth": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT",
                           "description": "An API token `svc_...` or an access JWT from sign-in. "
                                          "The listed scope is the one the operation requires."},
            "cookieAuth": {"type": "apiKey", "in": "cookie", "name": "sessionid",
                           "description": "The dashboard session (writes need the CSRF token)."},
        }},
        "POSTPROCESSING_HOOKS": [
            "drf_spectacular.hooks.postprocess_schema_enums",
            "drf_spectacular.contrib.djangorestframework_camel_case.camelize_serializer_fields",
        ],
    }


class OtpSchemaView(SpectacularAPIView):
    custom_settings = {
        "TITLE": "One-Time-Code Delivery API",
        "VERSION": "1.0.0",
        "PREPROCESSING_HOOKS": ["config.schema.otp_paths"],
    }


class WarehouseSchemaView(SpectacularAPIView):
    custom_settings = {
        "TITLE": "Warehouse Directory and Booking API",
        "VERSION": "1.0.0",
        "PREPROCESSING_HOOKS": ["config.schema.warehouse_paths"],
    }


def schema_routes(prefix: str, view_class, name: str):
    """`<prefix>openapi.json` (public) and `<prefix>docs` (Swagger UI)."""
    from django.urls import path

    return [
        path(f"{prefix}openapi.json", view_class.as_view(authentication_classes=[], permission_classes=[]),
             name=f"{name}-schema"),
        path(f"{prefix}docs", SpectacularSwaggerView.as_view(url_name=f"{name}-schema"), name=f"{name}-docs"),
    ]
