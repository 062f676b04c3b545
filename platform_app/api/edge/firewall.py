"""Firewall rules and the events they left (P = /v1/orgs/{orgId}/projects/{projectId})."""
from drf_spectacular.utils import OpenApiParameter, extend_schema_field, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from config.inputs import InputSerializer, query_int, validated
from config.serializers import ModelSerializer
from platform_app.api.base import PlatformView, cursor_page, endpoint
from platform_app.models import FirewallEvent, FirewallRule
from platform_app.services.edge import firewall

CONDITION_SCHEMA = {
    "type": "object", "required": ["field", "op", "value"], "additionalProperties": False,
    "properties": {"field": {"type": "string", "enum": list(firewall.FIELDS)},
                   "op": {"type": "string", "enum": list(firewall.OPS)},
                   "value": {"type": "string", "maxLength": firewall.MAX_VALUE},
                   "name": {"type": "string", "description": "the header's name (field header only)"}},
}
RATE_LIMIT_SCHEMA = {"type": "object", "required": ["requests", "windowSeconds"], "nullable": True,
                     "properties": {"requests": {"type": "integer", "minimum": 1},
                                    "windowSeconds": {"type": "integer", "minimum": 1}}}


@extend_schema_field({"type": "array", "items": CONDITION_SCHEMA})
class ConditionsField(serializers.ListField):
    """Each condition is checked by the service (firewall._condition_clean), which names the bad one."""

    child = serializers.DictField()


class RateLimitInput(InputSerializer):
    requests = serializers.IntegerField(min_value=1, max_value=1_000_000)
    window_seconds = serializers.IntegerField(min_value=1, max_value=86_400)


@extend_schema_field(RATE_LIMIT_SCHEMA)
class RateLimitField(serializers.JSONField):
    pass


class FirewallRuleSerializer(ModelSerializer):
    conditions = serializers.SerializerMethodField()
    rate_limit = serializers.SerializerMethodField()

    class Meta:
        model = FirewallRule
        fields = ("id", "name", "priority", "enabled", "action", "conditions", "rate_limit", "created_at",
                  "updated_at")

    @extend_schema_field({"type": "array", "items": CONDITION_SCHEMA})
    def get_conditions(self, obj) -> list:
        return obj.conditions

    @extend_schema_field(RATE_LIMIT_SCHEMA)
    def get_rate_limit(self, obj) -> dict | None:
        if obj.rate_limit_requests is None:
            return None
        return {"requests": obj.rate_limit_requests, "window_seconds": obj.rate_limit_window_seconds}


class FirewallRuleInput(InputSerializer):
    name = serializers.CharField(max_length=100)
    priority = serializers.IntegerField(min_value=-1_000_000, max_value=1_000_000, default=100)
    enabled = serializers.BooleanField(default=True)
    action = serializers.ChoiceField(choices=FirewallRule.Action.choices)
    conditions = ConditionsField(max_length=50, default=list)
    rate_limit = RateLimitField(required=False, allow_null=True, default=None)

    def validate_rate_limit(self, value):
        return None if value is None else validated(RateLimitInput, value)


class FirewallRuleUpdateInput(FirewallRuleInput):
    name = serializers.CharField(max_length=100, required=False)
    priority = serializers.IntegerField(min_value=-1_000_000, max_value=1_000_000, required=False)
    enabled = serializers.BooleanField(required=False)
    action = serializers.ChoiceField(choices=FirewallRule.Action.choices, required=False)
    conditions = ConditionsField(max_length=50, required=False)
    rate_limit = RateLimitField(required=False, allow_null=True)


class FirewallEventSerializer(ModelSerializer):
    class Meta:
        model = FirewallEvent
        fields = ("at", "rule_id", "action", "ip", "method", "path", "user_agent")


class FirewallRuleListView(PlatformView):
    @endpoint(scope="read", response=FirewallRuleSerializer(many=True), summary="Firewall rules, by priority",
              parameters=[OpenApiParameter("limit", {"type": "integer", "minimum": 1},
                                           description="1-100, default 100 (a project has at most "
                                                       "FIREWALL_MAX_RULES rules: one page)")],
              description="The edge tries enabled rules by ascending priority; the first whose conditions all "
                          "match decides.")
    def get(self, request, org_id, project_id):
        rows = firewall.firewall_rules_list(project=self.project(project_id))
        limit = query_int(request, "limit", default=100, maximum=100)
        return Response({"items": FirewallRuleSerializer(rows[:limit], many=True).data, "next_cursor": None})

    @endpoint(scope="admin", status=201, request=FirewallRuleInput, response=FirewallRuleSerializer,
              summary="Add a firewall rule",
              description="Conditions: field ip (op eq, cidr; IPv4 or IPv6), path (eq, prefix, glob, contains), "
                          "method (eq), header (with `name`), user_agent. A bad CIDR, pattern, field or operator "
                          "is 400 naming the condition. `rateLimit` is required for action rate_limit.")
    def post(self, request, org_id, project_id):
        data = validated(FirewallRuleInput, request)
        rule = firewall.firewall_rule_create(project=self.project(project_id), **data)
        return Response(FirewallRuleSerializer(rule).data, status=201)


class FirewallRuleDetailView(PlatformView):
    @endpoint(scope="admin", request=FirewallRuleUpdateInput, response=FirewallRuleSerializer,
              summary="Change a firewall rule (enable, disable, reorder, edit)")
    def patch(self, request, org_id, project_id, rule_id):
        data = validated(FirewallRuleUpdateInput, request)
        rule = firewall.firewall_rule_update(project=self.project(project_id), rule_id=rule_id, **data)
        return Response(FirewallRuleSerializer(rule).data)

    @endpoint(scope="admin", response=inline_serializer("FirewallRuleDeleted", {"deleted": serializers.BooleanField()}),
              summary="Delete a firewall rule")
    def delete(self, request, org_id, project_id, rule_id):
        firewall.firewall_rule_delete(project=self.project(project_id), rule_id=rule_id)
        return Response({"deleted": True})


class FirewallEventListView(PlatformView):
    @endpoint(scope="read", response=FirewallEventSerializer(many=True), summary="Requests the firewall refused",
              parameters=[OpenApiParameter("hours", {"type": "integer", "minimum": 1},
                                           description="look back this many hours: 1-720, default 24 (larger "
                                                       "values are clamped)")],
              description="Newest first. Events are kept FIREWALL_EVENT_RETENTION_HOURS (a week by default).")
    def get(self, request, org_id, project_id):
        project = self.project(project_id)
        hours = query_int(request, "hours", default=24, maximum=720)
        return cursor_page(request, firewall.firewall_events_list(project=project, hours=hours),
                           FirewallEventSerializer, order_field="at")
