"""Alert rules (P = /v1/orgs/{orgId}/projects/{projectId}) and the internal fire route."""
import hmac

from django.conf import settings
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.utils import extend_schema, extend_schema_field, inline_serializer
from rest_framework import serializers
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.response import Response

from config.errors import Unauthenticated
from config.inputs import InputSerializer, validated
from config.serializers import ModelSerializer
from platform_app.api.base import PlatformView, cursor_page, endpoint, field_with_schema
from platform_app.models import Alert, AlertRule
from platform_app.services.automation import alerts as services
from platform_app.services.automation.secret_urls import channels_masked


class AlertSerializer(ModelSerializer):
    class Meta:
        model = Alert
        fields = ("id", "value", "source", "message", "fired_at", "resolved_at")


METRIC = field_with_schema({"type": "string", "enum": list(AlertRule.Metric.values)})
RULE_STATE = field_with_schema({"type": "string", "enum": ["ok", "firing"]})


class AlertRuleSerializer(ModelSerializer):
    metric = METRIC(read_only=True)
    state = RULE_STATE(read_only=True)
    open_alert = serializers.SerializerMethodField()

    class Meta:
        model = AlertRule
        fields = ("id", "name", "metric", "threshold", "window_minutes", "channels", "state", "last_value",
                  "last_evaluated_at", "open_alert", "created_at")

    def to_representation(self, instance):
        """Webhook URLs whole only with `reveal_secrets` in the context (callers holding `admin`), else masked."""
        data = super().to_representation(instance)
        if not self.context.get("reveal_secrets"):
            data["channels"] = channels_masked(data["channels"])
        return data

    @extend_schema_field(AlertSerializer(allow_null=True))
    def get_open_alert(self, obj):
        alert = services.open_alert(obj)
        return AlertSerializer(alert).data if alert else None


class AlertRuleCreatedSerializer(AlertRuleSerializer):
    secret = serializers.CharField(help_text="Signs webhook notifications (`x-svc-signature`); shown only here.")

    class Meta(AlertRuleSerializer.Meta):
        fields = (*AlertRuleSerializer.Meta.fields, "secret")


CHANNEL = {"oneOf": [
    {"type": "object", "required": ["type", "to"], "additionalProperties": False,
     "properties": {"type": {"enum": ["email"]}, "to": {"type": "array", "items": {"type": "string", "format": "email"},
                                                        "minItems": 1, "maxItems": 20}}},
    {"type": "object", "required": ["type", "url"], "additionalProperties": False,
     "properties": {"type": {"enum": ["webhook"]}, "url": {"type": "string", "format": "uri"}}},
    {"type": "object", "required": ["type"], "additionalProperties": False,
     "properties": {"type": {"enum": ["members"]}, "roles": {"type": "array", "items": {"type": "string"}}}},
]}
Channel = field_with_schema(CHANNEL, base=serializers.DictField)


class AlertRuleInput(InputSerializer):
    name = serializers.CharField(max_length=100)
    metric = METRIC(max_length=32)
    threshold = serializers.FloatField(required=False, allow_null=True,
                                       help_text="Fires when the metric is at or above it (its unit: docs). Optional "
                                                 "for count metrics (deployment_failed, cron_failed, instance_down, "
                                                 "domain_misconfigured): 1.")
    window_minutes = serializers.IntegerField(default=5, min_value=1, max_value=settings.ALERT_MAX_WINDOW_MINUTES)
    channels = serializers.ListField(child=Channel(), min_length=1, max_length=10)


class AlertRuleListView(PlatformView):
    @endpoint(scope="read", response=AlertRuleSerializer(many=True), summary="Alert rules of a project")
    def get(self, request, org_id, project_id):
        return cursor_page(request, services.alert_rules_list(project=self.project(project_id)), AlertRuleSerializer,
                           context={"request": request, "reveal_secrets": self.holds("admin")})

    @endpoint(scope="admin", status=201, request=AlertRuleInput, response=AlertRuleCreatedSerializer,
              summary="Add an alert rule (its webhook secret is shown once)")
    def post(self, request, org_id, project_id):
        v = validated(AlertRuleInput, request)
        rule, secret = services.alert_rule_create(project=self.project(project_id), name=v["name"], metric=v["metric"],
                                                  threshold=v.get("threshold"), window_minutes=v["window_minutes"],
                                                  channels=v["channels"])
        rule.secret = secret
        return Response(AlertRuleCreatedSerializer(rule, context={"reveal_secrets": True}).data, status=201)


class AlertRuleDetailView(PlatformView):
    @endpoint(scope="admin", response=inline_serializer("AlertRuleDeleted", {"deleted": serializers.BooleanField()}),
              summary="Delete an alert rule and its history")
    def delete(self, request, org_id, project_id, rule_id):
        services.alert_rule_delete(project=self.project(project_id), rule_id=rule_id)
        return Response({"deleted": True})


# Internal ------------------------------------------------------------------------------------------

class InternalCaller:
    """Who an internal route acts for: the platform's own services, holding INTERNAL_API_TOKEN."""

    is_authenticated = True
    is_anonymous = False
    pk = None


class InternalTokenAuthentication(BaseAuthentication):
    """`Authorization: Bearer <INTERNAL_API_TOKEN>`, compared in constant time. User JWTs and API tokens are not
    accepted here (401), and an empty setting accepts nothing."""

    def authenticate(self, request):
        header = get_authorization_header(request).split()
        expected = settings.INTERNAL_API_TOKEN.encode()
        if len(header) != 2 or header[0].lower() != b"bearer" or not expected:
            raise Unauthenticated("This route takes the platform's internal token.")
        if not hmac.compare_digest(header[1], expected):
            raise Unauthenticated("This route takes the platform's internal token.", code="invalid_token")
        return InternalCaller(), "internal"

    def authenticate_header(self, request):
        return 'Bearer realm="internal"'


class InternalTokenScheme(OpenApiAuthenticationExtension):
    target_class = "platform_app.api.automation.alerts.InternalTokenAuthentication"
    name = "internalToken"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer",
                "description": "The platform's INTERNAL_API_TOKEN setting. User access tokens and API tokens are "
                               "refused (401)."}


def internal_endpoint(**schema_kwargs):
    """An internal route's schema: its security is derived from InternalTokenAuthentication (`internalToken`),
    not the user schemes `endpoint` declares; no scope applies."""

    def wrap(handler):
        handler.required_scope, handler.public = None, False
        return extend_schema(**schema_kwargs)(handler)

    return wrap


class AlertFireInput(InputSerializer):
    message = serializers.CharField(max_length=2000, required=False, allow_blank=True, default="")
    value = serializers.FloatField(required=False, allow_null=True, default=None)


class AlertFireView(PlatformView):
    authentication_classes = [InternalTokenAuthentication]

    @internal_endpoint(request=AlertFireInput, summary="Fire an alert rule (internal)",
                       responses={200: inline_serializer("AlertFired", {"fired": serializers.BooleanField(),
                                                                        "alert_id": serializers.CharField()})},
                       description="For the platform's own services: `Authorization: Bearer <INTERNAL_API_TOKEN>` "
                                   "(user and API tokens: 401). `fired` is false when the rule already had an open "
                                   "alert (its id is returned).")
    def post(self, request, rule_id):
        v = validated(AlertFireInput, request)
        alert, fired = services.alert_fire(rule_id=rule_id, message=v["message"], value=v["value"])
        return Response({"fired": fired, "alert_id": alert.pk})
