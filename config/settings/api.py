"""REST framework and OpenAPI settings."""

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [],
    "DEFAULT_PERMISSION_CLASSES": [],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "config.errors.exception_handler",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
    "DATETIME_FORMAT": "%Y-%m-%dT%H:%M:%S.%fZ",
}

# Each service publishes its own schema; config/schema.py narrows these per service.
SPECTACULAR_SETTINGS = {
    "TITLE": "Service API",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    "SCHEMA_PATH_PREFIX": r"/",
    # Choice sets that share a field name get stable component names.
    "ENUM_NAME_OVERRIDES": {
        "MovementKindEnum": "warehouse_app.models.Movement.Kind",
        "SessionKindEnum": "platform_app.choices.SessionKind",
        "QuoteStatusEnum": "warehouse_app.models.Quote.Status",
        "BookingStatusEnum": "warehouse_app.models.Booking.Status",
        "FacilityStatusEnum": "warehouse_app.models.Facility.Status",
        "TicketStatusEnum": "warehouse_app.models.SupportTicket.Status",
        "QuoteUnitEnum": "warehouse_app.models.Quote.Unit",
    },
}
