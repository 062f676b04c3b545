"""One OpenAPI document per service, each listing only its own paths, served as JSON and YAML
beside Swagger UI and ReDoc. The errors each operation documents come from config/openapi.py."""
import copy

from django.urls import path
from drf_spectacular.contrib.djangorestframework_camel_case import camelize_serializer_fields
from drf_spectacular.renderers import OpenApiJsonRenderer2, OpenApiYamlRenderer2
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerSplitView
from rest_framework.negotiation import BaseContentNegotiation


# Documents ----------------------------------------------------------------------------

def platform_paths(endpoints, **kwargs):
    return [e for e in endpoints if e[0] == "/health" or e[0].startswith("/v1/")]


def otp_paths(endpoints, **kwargs):
    return [e for e in endpoints if e[0].startswith("/api/v1/")]


def warehouse_paths(endpoints, **kwargs):
    return [e for e in endpoints if e[0].startswith("/api/") and not e[0].startswith("/api/v1/")]


# OAuth's own wire format (RFC 6749, RFC 7591): the MCP token endpoint answers these fields as they are spelled
SNAKE_CASE_COMPONENTS = {"McpTokens", "McpOAuthError"}


def camelize_platform_fields(result, generator, request, public):
    """The platform's bodies are camelCase, except OAuth's."""
    schemas = {name: component.schema for (name, kind), component in generator.registry._components.items()
               if kind == "schemas" and name in SNAKE_CASE_COMPONENTS}
    kept = copy.deepcopy(schemas)
    result = camelize_serializer_fields(result, generator, request, public)
    for name, schema in schemas.items():  # the same objects the document holds
        schema.clear()
        schema.update(kept[name])
    return result


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
            "streamToken": {"type": "apiKey", "in": "query", "name": "token",
                            "description": "A stream token from `POST /v1/auth/ws-token`, for log streams only "
                                           "(EventSource cannot send headers)."},
        }},
        "POSTPROCESSING_HOOKS": [
            "drf_spectacular.hooks.postprocess_schema_enums",
            "config.schema.camelize_platform_fields",
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


class FirstRenderer(BaseContentNegotiation):
    """The URL names the format: `.json` answers JSON and `.yaml` YAML, whatever `Accept` says."""

    def select_parser(self, request, parsers):
        return parsers[0] if parsers else None

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


def schema_routes(prefix: str, view_class, name: str):
    """`<prefix>openapi.json` and `.yaml` (public), `<prefix>docs` (Swagger UI), `<prefix>redoc`;
    the UIs load their scripts from this project's static files (drf-spectacular-sidecar), Swagger UI's init
    script from `<prefix>docs?script` (the Content-Security-Policy allows no inline script)."""
    public = {"authentication_classes": [], "permission_classes": [], "content_negotiation_class": FirstRenderer}
    title = view_class.custom_settings["TITLE"]
    return [
        path(f"{prefix}openapi.json", view_class.as_view(renderer_classes=[OpenApiJsonRenderer2], **public),
             name=f"{name}-schema"),
        path(f"{prefix}openapi.yaml", view_class.as_view(renderer_classes=[OpenApiYamlRenderer2], **public),
             name=f"{name}-schema-yaml"),
        path(f"{prefix}docs", SpectacularSwaggerSplitView.as_view(url_name=f"{name}-schema", title=title),
             name=f"{name}-docs"),
        path(f"{prefix}redoc", SpectacularRedocView.as_view(url_name=f"{name}-schema", title=title,
                                                            template_name="api_docs/redoc.html"),
             name=f"{name}-redoc"),
    ]
