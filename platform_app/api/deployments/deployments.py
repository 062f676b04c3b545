"""Deployments: trigger, list, get, events, cancel, build log (JSON) and live log stream (SSE)."""
from functools import partial

from django.conf import settings
from django.core.handlers.asgi import ASGIRequest
from django.http import HttpResponse, StreamingHttpResponse
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse
from rest_framework import serializers
from rest_framework.response import Response

from config.errors import ValidationFailed
from config.inputs import InputSerializer, ascii_int, query_int, validated
from config.serializers import ModelSerializer
from platform_app.api.base import PlatformView, cursor_page, endpoint, idempotency_key
from platform_app.api.kept import kept_bytes
from platform_app.authentication import (BearerAuthentication, CookieSessionAuthentication, StreamTokenAuthentication,
                                         request_credential)
from platform_app.models import Deployment, DeploymentEvent
from platform_app.services.deployments import deployments as services
from platform_app.services.deployments.listings import deployment_list_context
from platform_app.services.deployments.log_archive import log_lines
from platform_app.services.deployments.log_stream import FINISHED, log_replay_whole, log_stream_open
from platform_app.services.identity.stream_tokens import stream_access_lost
from platform_app.services.projects.addresses import deployment_url
from platform_app.services.deployments.selectors import deployments_of


def no_build_queued(data) -> bool:
    """Whether a deployment answer may be kept (api/kept.py): not while it shows a place in the build queue, which
    every workspace's builds move."""
    return all(item["queue_position"] is None for item in (data["items"] if "items" in data else [data]))


class DeploymentListSerializer(serializers.ListSerializer):
    """A page of deployments: what the items need beyond their rows is looked up once, into the context."""

    def to_representation(self, data):
        rows = list(data.all() if hasattr(data, "all") else data)
        self.context.update(deployment_list_context(deployments=rows))
        return super().to_representation(rows)


class DeploymentSerializer(ModelSerializer):
    project_id = serializers.CharField()
    url = serializers.SerializerMethodField()
    queued_at = serializers.DateTimeField(source="created_at")
    queue_position = serializers.SerializerMethodField()
    needs_redeploy = serializers.SerializerMethodField()
    source_id = serializers.CharField(source="source_upload_id", allow_null=True,
                                      help_text="What an upload project built (`POST P/sources`); null otherwise")
    log_expired_at = serializers.DateTimeField(allow_null=True, read_only=True,
                                               help_text="when its build log was deleted (LOG_RETENTION_DAYS)")

    class Meta:
        model = Deployment
        fields = ("id", "project_id", "env", "branch", "commit_sha", "trigger", "status", "url", "created_at",
                  "queued_at", "started_at", "ready_at", "finished_at", "error_message", "queue_position",
                  "framework", "snapshot", "needs_redeploy", "source_id", "log_expired_at")
        list_serializer_class = DeploymentListSerializer

    def get_needs_redeploy(self, obj) -> bool:
        flags = self.context.get("redeploy_flags") or {}
        return flags[obj.pk] if obj.pk in flags else services.needs_redeploy(obj)

    def get_url(self, obj) -> str:
        return deployment_url(obj)

    def get_queue_position(self, obj) -> int | None:
        positions = self.context.get("queue_positions") or {}
        return positions[obj.pk] if obj.pk in positions else services.queue_position(obj)


class EventSerializer(ModelSerializer):
    class Meta:
        model = DeploymentEvent
        fields = ("type", "message", "created_at")


class LogLineSerializer(serializers.Serializer):
    seq = serializers.IntegerField(help_text="the line's number: `after=` and the stream's event id")
    stream = serializers.CharField(help_text="build or system")
    text = serializers.CharField()
    at = serializers.DateTimeField(source="created_at")


class DeploymentLogSerializer(serializers.Serializer):
    deployment_id = serializers.CharField()
    status = serializers.CharField()
    lines = LogLineSerializer(many=True)
    expired_at = serializers.DateTimeField(allow_null=True, help_text="set when LOG_RETENTION_DAYS deleted the log: "
                                                                      "`lines` is then empty")


class TriggerInput(InputSerializer):
    env = serializers.CharField(max_length=64, default="preview")
    branch = serializers.CharField(max_length=200, required=False, allow_blank=True)
    trigger = serializers.CharField(max_length=16, default="api")
    source = serializers.CharField(max_length=40, required=False,
                                   help_text="An upload project's upload id (`POST P/sources`); default its latest")



class ProjectDeploymentsView(PlatformView):
    @endpoint(scope="read", response=DeploymentSerializer(many=True), summary="Deployments of a project",
              kept=no_build_queued)
    def get(self, request, org_id, project_id):
        return cursor_page(request, deployments_of(project=self.project(project_id)), DeploymentSerializer)

    @endpoint(scope="deploy", status=201, request=TriggerInput, response=DeploymentSerializer, errors=(402,),
              also={200: OpenApiResponse(DeploymentSerializer, description="An Idempotency-Key replay")},
              summary="Trigger a deployment (queued, then built by a worker)",
              parameters=[OpenApiParameter("Idempotency-Key", str, OpenApiParameter.HEADER,
                                           description="a retry with the same key returns the first deployment (200)")])
    def post(self, request, org_id, project_id):
        v = validated(TriggerInput, request)
        deployment = services.deployment_trigger(project=self.project(project_id), env=v["env"],
                                                 branch=v.get("branch") or None, trigger=v["trigger"],
                                                 actor=request.user, ip=self.ip,
                                                 idempotency_key=idempotency_key(request), source_id=v.get("source"))
        replayed = getattr(deployment, "_replayed", False)
        deployment.refresh_from_db()
        return Response(DeploymentSerializer(deployment).data, status=200 if replayed else 201)


class WorkspaceDeploymentsView(PlatformView):
    @endpoint(scope="read", response=DeploymentSerializer(many=True), summary="Deployments of the workspace",
              kept=no_build_queued,
              parameters=[OpenApiParameter("status", str, enum=Deployment.Status.values), OpenApiParameter("env", str),
                          OpenApiParameter("projectId", str)])
    def get(self, request, org_id):
        status = request.query_params.get("status", "")
        if status and status not in Deployment.Status.values:
            raise ValidationFailed(f"status must be one of {', '.join(Deployment.Status.values)}.",
                                   details={"status": ["Invalid."]})
        qs = deployments_of(workspace=self.workspace, status=status, env=request.query_params.get("env", ""),
                            project_id=request.query_params.get("projectId", ""))
        return cursor_page(request, qs, DeploymentSerializer)


class DeploymentDetailView(PlatformView):
    @endpoint(scope="read", response=DeploymentSerializer, summary="One deployment with its status and URL",
              kept=no_build_queued)
    def get(self, request, org_id, deployment_id):
        return Response(DeploymentSerializer(services.deployment_get(workspace=self.workspace,
                                                                     deployment_id=deployment_id)).data)


class DeploymentEventsView(PlatformView):
    @endpoint(scope="read", response=EventSerializer(many=True), summary="State changes of a deployment", kept=True)
    def get(self, request, org_id, deployment_id):
        deployment = services.deployment_get(workspace=self.workspace, deployment_id=deployment_id)
        return Response({"items": EventSerializer(deployment.events.all(), many=True).data, "next_cursor": None})


class DeploymentCancelView(PlatformView):
    @endpoint(scope="deploy", status=201, request=None, response=DeploymentSerializer,
              summary="Cancel a queued or running build (409 when it already ended)")
    def post(self, request, org_id, deployment_id):
        deployment = services.deployment_cancel(workspace=self.workspace, deployment_id=deployment_id,
                                                actor=request.user)
        return Response(DeploymentSerializer(deployment).data, status=201)


LOG_LINES_DEFAULT, LOG_LINES_MAX = 100, 5000


class DeploymentLogView(PlatformView):
    @endpoint(scope="read", response=DeploymentLogSerializer, summary="A deployment's build log",
              description="The last `lines` lines; with `after`, the first `lines` lines after line number `after` "
                          "(page forward from the last `seq`). Archived logs read the same as building ones.",
              parameters=[OpenApiParameter("lines", {"type": "integer", "minimum": 1},
                                           description=f"default {LOG_LINES_DEFAULT}, at most {LOG_LINES_MAX} "
                                                       "(larger values are clamped)"),
                          OpenApiParameter("after", {"type": "integer", "minimum": 0},
                                           description="a line number: the lines after it")])
    def get(self, request, org_id, deployment_id):
        deployment = services.deployment_get(workspace=self.workspace, deployment_id=deployment_id)
        count = query_int(request, "lines", default=LOG_LINES_DEFAULT, maximum=LOG_LINES_MAX)
        after = query_int(request, "after", default=0, minimum=0) if "after" in request.query_params else None
        lines = (log_lines(deployment.pk, tail=count) if after is None
                 else log_lines(deployment.pk, after=after, limit=count))
        return Response(DeploymentLogSerializer({"deployment_id": deployment.pk, "status": deployment.status,
                                                 "lines": lines, "expired_at": deployment.log_expired_at}).data)


def _resume_after(request) -> int:
    """The line to resume after: `Last-Event-ID` (EventSource's reconnection) or `?lastEventId=`. Anything but
    ASCII digits reads as 0 (from the start); a number past 64 bits names no line: 400."""
    raw = request.headers.get("Last-Event-ID") or request.query_params.get("lastEventId") or "0"
    if not (raw.isascii() and raw.isdigit()):  # "²".isdigit(), yet int("²") fails
        return 0
    after = ascii_int(raw, max_digits=18)
    if after is None:
        raise ValidationFailed("`Last-Event-ID` must be a line number.",
                               details={"lastEventId": ["Must be a line number (at most 18 digits)."]})
    return after


class DeploymentLogStreamView(PlatformView):
    # EventSource cannot send headers: `?token=` from /v1/auth/ws-token, after a presented Authorization header (one
    # that fails refuses the request, whatever else it carries) and before the session cookie. A stream token acts
    # as its maker (scopes, workspace binding) and is checked like any credential by PlatformView.
    authentication_classes = [BearerAuthentication, StreamTokenAuthentication, CookieSessionAuthentication]

    def perform_content_negotiation(self, request, force=False):
        # EventSource asks for `Accept: text/event-stream`; the stream answers that, its errors answer JSON
        return super().perform_content_negotiation(request, force=True)

    @endpoint(scope="read", summary="Build and deploy logs as server-sent events", errors=(429,),
              response=OpenApiResponse(description="text/event-stream: `log` events (id = line number), then `end`; "
                                                   "`revoked` (data: the reason) ends it early when the credential "
                                                   "is revoked or the caller leaves the workspace"),
              also_auth=[{"streamToken": []}],
              parameters=[OpenApiParameter("Last-Event-ID", str, OpenApiParameter.HEADER)])
    def get(self, request, org_id, deployment_id):
        deployment = services.deployment_get(workspace=self.workspace, deployment_id=deployment_id)
        after = _resume_after(request)
        # a finished build's log is all there: answered whole, in one read, and kept
        whole = (kept_bytes(self, ("log-replay", after), partial(log_replay_whole, deployment_id=deployment.pk,
                                                                 status=deployment.status, after=after))
                 if deployment.status in FINISHED else b"")
        if whole:  # a complete answer, sent after the request's one hop (empty: building, or too long)
            response = HttpResponse(whole, content_type="text/event-stream")
        else:
            # An open stream outlives its request: it ends when the credential is revoked or the member leaves.
            credential, workspace_id = request_credential(request), self.workspace.pk
            # ASGI: an async body that holds no thread while open; WSGI (and the test client): driven from here
            content = log_stream_open(deployment_id=deployment.pk, after=after, holder=request.user.pk,
                                      asynchronous=isinstance(request._request, ASGIRequest),
                                      access_lost=partial(stream_access_lost, credential=credential,
                                                          workspace_id=workspace_id),
                                      access_key=(credential, workspace_id),
                                      recheck=settings.LOG_STREAM_RECHECK_SECONDS)
            response = StreamingHttpResponse(content, content_type="text/event-stream")
        response["Cache-Control"] = "no-cache"
        response["X-Accel-Buffering"] = "no"
        if deployment.log_expired_at:  # its lines were deleted (LOG_RETENTION_DAYS): the stream replays none
            response["X-Log-Expired-At"] = deployment.log_expired_at.isoformat()
        return response
