"""Feedback: `POST /v1/feedback` for anyone (signed in or not, limited per user or address); the inbox
(`/v1/feedback/inbox`, `/inbox/{id}`) for staff only."""
from drf_spectacular.utils import OpenApiParameter, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from config.inputs import InputSerializer, validated
from config.serializers import ModelSerializer
from platform_app.api.base import PlatformView, cursor_page, endpoint, field_with_schema
from platform_app.api.org.staff import staff_only
from platform_app.models import Feedback
from platform_app.services.org import feedback as services

CATEGORY = field_with_schema({"type": "string", "enum": list(Feedback.Category.values)})
STATUS = field_with_schema({"type": "string", "enum": list(Feedback.Status.values)})


class FeedbackInput(InputSerializer):
    message = serializers.CharField(max_length=5000)
    category = CATEGORY(max_length=16)
    page = serializers.CharField(max_length=500, allow_blank=True, default="", help_text="Where it was sent from.")
    email = serializers.CharField(max_length=254, allow_blank=True, default="", help_text="A reply address.")


class FeedbackItemSerializer(ModelSerializer):
    category = CATEGORY(read_only=True)
    status = STATUS(read_only=True)
    assignee = serializers.CharField(source="assignee_id", allow_null=True, help_text="A staff user's id.")
    assignee_email = serializers.CharField(source="assignee.email", allow_null=True, default=None)
    user_id = serializers.CharField(allow_null=True, help_text="The sender, when signed in.")

    class Meta:
        model = Feedback
        fields = ("id", "message", "category", "page", "email", "status", "assignee", "assignee_email", "note",
                  "user_id", "created_at", "updated_at")


class FeedbackPatchInput(InputSerializer):
    status = STATUS(max_length=16, required=False)
    assignee = serializers.CharField(max_length=254, allow_null=True, required=False,
                                     help_text="A staff user's id or email; null to unassign.")
    note = serializers.CharField(max_length=5000, allow_blank=True, required=False)


Sent = inline_serializer("FeedbackSent", {"id": serializers.CharField()})
Deleted = inline_serializer("FeedbackDeleted", {"deleted": serializers.BooleanField()})


class FeedbackView(PlatformView):
    @endpoint(public=True, status=201, request=FeedbackInput, response=Sent, errors=(429,),
              summary="Send feedback (signed in or not)",
              description="Limited per user, and per client address when not signed in (429 with Retry-After).")
    def post(self, request):
        v = validated(FeedbackInput, request)
        user = request.user if request.user.is_authenticated else None
        item = services.feedback_create(user=user, ip=self.ip, **v)
        return Response({"id": item.pk}, status=201)


class FeedbackInboxView(PlatformView):
    @endpoint(scope="read", response=FeedbackItemSerializer(many=True), summary="The feedback inbox (staff)",
              parameters=[OpenApiParameter("status", {"type": "string", "enum": list(Feedback.Status.values)}),
                          OpenApiParameter("category", {"type": "string", "enum": list(Feedback.Category.values)})])
    def get(self, request):
        staff_only(request)
        items = services.feedback_inbox(status=request.query_params.get("status"),
                                        category=request.query_params.get("category"))
        return cursor_page(request, items, FeedbackItemSerializer)


class FeedbackItemView(PlatformView):
    @endpoint(scope="admin", request=FeedbackPatchInput, response=FeedbackItemSerializer,
              summary="Triage feedback: status, assignee, note (staff)")
    def patch(self, request, feedback_id):
        staff_only(request)
        v = validated(FeedbackPatchInput, request)
        item = services.feedback_update(feedback_id=feedback_id, **v)
        return Response(FeedbackItemSerializer(item).data)

    @endpoint(scope="admin", response=Deleted, summary="Delete feedback (staff)")
    def delete(self, request, feedback_id):
        staff_only(request)
        services.feedback_delete(feedback_id=feedback_id)
        return Response({"deleted": True})
