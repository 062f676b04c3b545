"""REST framework and OpenAPI settings."""
from .core import env
from .sandbox import ARTIFACT_MAX_BYTES
from .staff import STATUS_COMPONENTS

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [],
    "DEFAULT_PERMISSION_CLASSES": [],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["config.parsers.JSONParser"],  # bounded size and depth, storable text
    "DEFAULT_CONTENT_NEGOTIATION_CLASS": "config.negotiation.ContentNegotiation",  # the usual Accept at once
    "DEFAULT_SCHEMA_CLASS": "config.openapi.ServiceAutoSchema",  # adds each operation's errors
    "EXCEPTION_HANDLER": "config.errors.exception_handler",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
    "DATETIME_FORMAT": "%Y-%m-%dT%H:%M:%S.%fZ",
}

# Input limits (docs/architecture.md): JSON nested deeper than this is 400 malformed_json, before parsing.
JSON_MAX_DEPTH = 32
# Routes whose bodies may exceed DATA_UPLOAD_MAX_MEMORY_SIZE (1 MiB), by view: a dotenv file may hold 1,000,000
# characters (4 MiB as escaped JSON); an agent's heartbeat carries up to 200 log lines per instance; the code
# host caps its webhook deliveries at 25 MB (a push of many commits), and refusing one loses a deploy.
REQUEST_BODY_LIMITS = {
    "platform_app.api.env.env.EnvImportView": 4 * 1024 * 1024,
    "platform_app.api.agents.agents.AgentHeartbeatView": 4 * 1024 * 1024,
    "platform_app.api.deployments.doctor.GitAWebhookView": 25 * 1024 * 1024,
    "platform_app.api.deployments.builds.BuildArtifactView": ARTIFACT_MAX_BYTES,
    # checked against UPLOAD_MAX_BYTES by the view, which names that limit in its 413
    "platform_app.api.deployments.sources.SourceUploadView": ARTIFACT_MAX_BYTES,
}
# Of those, the ones that read their body as a stream (a builder's archive): only the declared length is
# checked before the view, which reads it to disk itself instead of into memory.
REQUEST_BODY_STREAMED = {"platform_app.api.deployments.builds.BuildArtifactView",
                         "platform_app.api.deployments.sources.SourceUploadView"}

# Each service publishes its own schema; config/schema.py narrows these per service.
SPECTACULAR_SETTINGS = {
    "TITLE": "Service API",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    "SCHEMA_PATH_PREFIX": r"/",
    # Swagger UI and ReDoc from this project's static files (drf-spectacular-sidecar), never a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "SWAGGER_UI_SETTINGS": {"deepLinking": True, "persistAuthorization": True, "validatorUrl": None},
    # Choice sets that share a field name get stable component names.
    "ENUM_NAME_OVERRIDES": {
        "MovementKindEnum": "warehouse_app.models.Movement.Kind",
        "WorkspaceRoleEnum": "platform_app.choices.Role",
        "QuoteStatusEnum": "warehouse_app.models.Quote.Status",
        "BookingStatusEnum": "warehouse_app.models.Booking.Status",
        "FacilityStatusEnum": "warehouse_app.models.Facility.Status",
        "TicketStatusEnum": "warehouse_app.models.SupportTicket.Status",
        "QuoteUnitEnum": "warehouse_app.models.Quote.Unit",
        "DnsRecordTypeEnum": "platform_app.models.domains.RecordType",
        "EnvVarTypeEnum": "platform_app.models.env.EnvVar.Type",
        "IncidentStatusEnum": ["investigating", "identified", "monitoring", "resolved"],
        "IncidentImpactEnum": ["minor", "major", "critical"],
        "StatusStateEnum": ["operational", "degraded", "outage"],
        "StatusComponentEnum": list(STATUS_COMPONENTS),
        "FeedbackStatusEnum": ["new", "triaged", "done"],
        "TunnelStatusEnum": ["stopped", "waiting", "connected"],
        "InvoiceKindEnum": "platform_app.models.billing.Invoice.Kind",
    },
}

# Workspace answers kept whole per web process while the workspace's answer stamp holds (platform_app/api/kept.py):
# at most this many bytes, each at most this many seconds (an answer whose stamp moved is never sent again).
WORKSPACE_ANSWERS_BYTES = env.int("WORKSPACE_ANSWERS_BYTES", default=8 * 1024 * 1024)
WORKSPACE_ANSWERS_TTL_SECONDS = env.float("WORKSPACE_ANSWERS_TTL_SECONDS", default=300.0)
