"""Growth: `track` for anyone signed in (allow-listed client events); the funnel and the weekly reviews for staff."""
from drf_spectacular.utils import OpenApiParameter, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from config.inputs import InputSerializer, query_int, validated
from config.serializers import ModelSerializer
from platform_app.api.base import PlatformView, endpoint
from platform_app.api.org.staff import staff_only
from platform_app.models import WeeklyReview
from platform_app.services.org import growth as services


class TrackInput(InputSerializer):
    event = serializers.CharField(max_length=64, help_text="One of the allowed client events (GROWTH_CLIENT_EVENTS).")
    properties = serializers.DictField(required=False, help_text="At most 20 short scalar values.")


Tracked = inline_serializer("GrowthTracked", {"id": serializers.CharField(), "event": serializers.CharField()})
FunnelSerializer = inline_serializer("GrowthFunnel", {
    "weeks": serializers.IntegerField(),
    "steps": serializers.ListField(child=serializers.CharField()),
    "cohorts": inline_serializer("GrowthCohort", {
        "week": serializers.DateField(help_text="The Monday of the sign-up week (UTC)."),
        "counts": serializers.ListField(child=serializers.IntegerField(), help_text="Users per step.")},
        many=True)})


class ReviewSerializer(ModelSerializer):
    class Meta:
        model = WeeklyReview
        fields = ("week", "active_workspaces", "sign_ups", "deployments", "failure_rate", "revenue", "revenue_note",
                  "computed_at")


ReviewHistorySerializer = inline_serializer("GrowthReviewHistory", {
    "items": ReviewSerializer(many=True), "next_cursor": serializers.CharField(allow_null=True)})


class TrackView(PlatformView):
    @endpoint(status=201, request=TrackInput, response=Tracked, errors=(429,), summary="Record a client event",
              description="Unknown events are 400; milestones (sign-up, first project...) are recorded by the "
                          "platform itself.")
    def post(self, request):
        v = validated(TrackInput, request)
        event = services.growth_track(user=request.user, event=v["event"], properties=v.get("properties"))
        return Response({"id": event.pk, "event": event.event}, status=201)


class FunnelView(PlatformView):
    @endpoint(scope="read", response=FunnelSerializer, summary="Weekly funnel by sign-up cohort (staff)",
              parameters=[OpenApiParameter("weeks", {"type": "integer", "minimum": 1, "maximum": 52},
                                           description="1-52, default 8")])
    def get(self, request):
        staff_only(request)
        weeks = query_int(request, "weeks", default=8, maximum=52, clamp=False)
        return Response(services.growth_funnel(weeks=weeks))


class ReviewCurrentView(PlatformView):
    @endpoint(scope="read", response=ReviewSerializer, summary="This week's review, to now (staff)")
    def get(self, request):
        staff_only(request)
        return Response(ReviewSerializer(services.growth_review_current()).data)


class ReviewHistoryView(PlatformView):
    @endpoint(scope="read", response=ReviewHistorySerializer, summary="The last weeks' reviews, newest first (staff)",
              parameters=[OpenApiParameter("n", {"type": "integer", "minimum": 1, "maximum": 52},
                                           description="1-52, default 12")])
    def get(self, request):
        staff_only(request)
        n = query_int(request, "n", default=12, maximum=52, clamp=False)
        return Response({"items": ReviewSerializer(services.growth_reviews_history(n=n), many=True).data,
                         "next_cursor": None})
