"""Node agents, instances, runtime logs and image deployments."""
import json

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from config.errors import Unauthenticated
from config.inputs import InputSerializer, query_int, validated
from config.serializers import ModelSerializer
from platform_app.api.base import PlatformView, endpoint
from platform_app.api.deployments.deployments import DeploymentSerializer
from platform_app.models import AgentNode, Instance
from platform_app.services.agents import agents, images
from platform_app.services.deployments import build_jobs
from platform_app.services.deployments.deployments import deployment_get
from platform_app.services.deployments.listings import nodes_list, nodes_running_counts
from platform_app.services.agents.selectors import runtime_log_tail


class NodeSerializer(ModelSerializer):
    running = serializers.SerializerMethodField()

    class Meta:
        model = AgentNode
        fields = ("id", "name", "host", "runtimes", "capacity", "status", "sandbox", "last_heartbeat_at", "created_at",
                  "running")

    def get_running(self, obj) -> int:
        counts = self.context.get("running_counts") or {}
        return counts[obj.pk] if obj.pk in counts else nodes_running_counts(nodes=[obj])[obj.pk]


class InstanceSerializer(ModelSerializer):
    node_id = serializers.CharField()

    class Meta:
        model = Instance
        fields = ("id", "node_id", "status", "port", "pid", "error", "memory_peak_bytes", "created_at", "updated_at")


def bounded_json(max_chars: int):
    """A validator: the value, as JSON, holds at most `max_chars` characters (a free-form report stays small)."""
    def check(value):
        if len(json.dumps(value)) > max_chars:
            raise serializers.ValidationError(f"At most {max_chars} characters as JSON.")
    return check


def sandbox_report():
    return serializers.DictField(required=False, default=dict, validators=[bounded_json(4096)],
                                 help_text="what the node's sandbox enforces (at most 4096 characters as JSON)")


INT32 = 2 ** 31 - 1  # the database's integer columns


class JoinInput(InputSerializer):
    token = serializers.CharField(max_length=100)
    name = serializers.CharField(max_length=100)
    runtimes = serializers.ListField(child=serializers.ChoiceField(choices=["process", "image", "container", "build"]),
                                     default=list, max_length=4,
                                     help_text="capabilities: run instances (`process`), OCI images in the sandbox "
                                               "(`image`), containers, builds")
    capacity = serializers.IntegerField(min_value=0, max_value=1000, default=4)
    host = serializers.CharField(max_length=200, required=False, default="127.0.0.1",
                                 help_text="where the edge reaches the node's instances: a workspace node's must be "
                                           "an address the outbound guard allows (docs/outbound.md)")
    sandbox = sandbox_report()


# A node's reports come from a machine its workspace controls: every field is typed and bounded.
class InstanceReport(InputSerializer):
    instance_id = serializers.CharField(max_length=40)
    status = serializers.ChoiceField(choices=agents.REPORTED)
    port = serializers.IntegerField(min_value=1, max_value=65535, required=False, allow_null=True, default=None)
    pid = serializers.IntegerField(min_value=1, max_value=INT32, required=False, allow_null=True, default=None)
    error = serializers.CharField(max_length=2000, required=False, allow_blank=True, default="")
    restarts = serializers.IntegerField(min_value=0, max_value=INT32, required=False, default=0)
    memory_peak_bytes = serializers.IntegerField(min_value=0, max_value=2 ** 62, required=False, allow_null=True,
                                                 default=None)


class LogReport(InputSerializer):
    instance_id = serializers.CharField(max_length=40)
    lines = serializers.ListField(child=serializers.CharField(max_length=agents.MAX_LOG_LINE_CHARS, allow_blank=True,
                                                              trim_whitespace=False),
                                  max_length=agents.MAX_LOG_LINES)


class VolumeReport(InputSerializer):
    id = serializers.CharField(max_length=40)
    used_bytes = serializers.IntegerField(min_value=0, max_value=2 ** 62)


class PullReport(InputSerializer):
    instance_id = serializers.CharField(max_length=40)
    lines = serializers.ListField(child=serializers.CharField(max_length=agents.MAX_LOG_LINE_CHARS, allow_blank=True,
                                                              trim_whitespace=False), max_length=200)
    error = serializers.CharField(max_length=2000, required=False, allow_blank=True, default="")


class HeartbeatInput(InputSerializer):
    capacity = serializers.IntegerField(min_value=0, max_value=1000, required=False, allow_null=True, default=None)
    instances = serializers.ListField(child=InstanceReport(), default=list, max_length=1000)
    logs = serializers.ListField(child=LogReport(), default=list, max_length=1000)
    sandbox = sandbox_report()
    volumes = serializers.ListField(child=VolumeReport(), default=list, max_length=1000,
                                    help_text="what each volume folder holds: {id, usedBytes}")
    pulls = serializers.ListField(child=PullReport(), default=list, max_length=100,
                                  help_text="what the node's image pulls did (layers, cached or fetched, times), "
                                            "for the deployments' logs")
    wait = serializers.FloatField(min_value=0, max_value=25, default=0,
                                  help_text="seconds to hold the answer while it would ask nothing new (a long poll)")


class ClaimInput(InputSerializer):
    wait = serializers.FloatField(min_value=0, max_value=25, default=20,
                                  help_text="seconds to wait for a job before answering 204")


class ImageInput(InputSerializer):
    image_ref = serializers.CharField(max_length=300, required=False, allow_blank=True, default="")
    env = serializers.CharField(max_length=64, default="production")


def _node(request, node_id):
    header = request.headers.get("Authorization", "")
    if not header.startswith("Bearer "):
        raise Unauthenticated("Send the node token as `Authorization: Bearer agn_...`.")
    return agents.agent_authenticate(node_id=node_id, token=header[7:])


class AgentListView(PlatformView):
    @endpoint(scope="read", response=NodeSerializer(many=True), summary="Node agents of the workspace")
    def get(self, request, org_id):
        rows = nodes_list(workspace=self.workspace)
        context = {"request": request, "running_counts": nodes_running_counts(nodes=rows)}
        return Response({"items": NodeSerializer(rows, many=True, context=context).data, "next_cursor": None})


class AgentInviteView(PlatformView):
    @endpoint(scope="admin", status=201, request=None, summary="A single-use join token (shown once)",
              response=inline_serializer("AgentInvite", {"token": serializers.CharField(),
                                                         "expires_at": serializers.DateTimeField(),
                                                         "command": serializers.CharField()}))
    def post(self, request, org_id):
        invite, token = agents.agent_invite_create(workspace=self.workspace, actor=request.user)
        return Response({"token": token, "expires_at": invite.expires_at,
                         "command": agents.agent_join_command(token)}, status=201)


class AgentJoinView(PlatformView):
    @endpoint(public=True, request=JoinInput, summary="Join with a single-use token; answers the node's own token",
              response=inline_serializer("AgentJoined", {"node_id": serializers.CharField(),
                                                         "node_token": serializers.CharField()}))
    def post(self, request):
        data = validated(JoinInput, request)
        node, token = agents.agent_join(**data)
        return Response({"node_id": node.pk, "node_token": token, "heartbeat_seconds": 2})


class AgentHeartbeatView(PlatformView):
    authentication_classes = []

    @endpoint(public=True, request=HeartbeatInput, errors=(401,),
              summary="Report capacity, instances and output; get assignments",
              response=inline_serializer("AgentAssignments", {"assignments": serializers.ListField(),
                                                              "stop": serializers.ListField(),
                                                              "drain": serializers.BooleanField()}))
    def post(self, request, node_id):
        node = _node(request, node_id)
        data = validated(HeartbeatInput, request)
        return Response(agents.agent_heartbeat(node=node, **data))


class AgentClaimView(PlatformView):
    authentication_classes = []

    @endpoint(public=True, request=ClaimInput, errors=(401, 409), also={204: None},
              summary="A builder takes the next build job (long poll); 204 when none came within `wait`",
              response=inline_serializer("BuildJob", {"id": serializers.CharField(), "token": serializers.CharField(),
                                                      "commands": serializers.ListField()}))
    def post(self, request, node_id):
        node = _node(request, node_id)
        data = validated(ClaimInput, request)
        job = build_jobs.build_job_claim(node=node, wait=data["wait"])
        return Response(job) if job is not None else Response(status=204)


class AgentArtifactView(PlatformView):
    authentication_classes = []

    @endpoint(public=True, errors=(401,), summary="A deployment's archive for a node running it (or a redirect "
                                                  "to a presigned URL in object storage)",
              response=OpenApiResponse(description="application/gzip"))
    def get(self, request, node_id, deployment_id):
        return agents.agent_artifact(node=_node(request, node_id), deployment_id=deployment_id)


class AgentLeaveView(PlatformView):
    authentication_classes = []

    @endpoint(public=True, request=None, response=NodeSerializer, errors=(401,),
              summary="Leave: the node's instances move elsewhere")
    def post(self, request, node_id):
        return Response(NodeSerializer(agents.agent_leave(node=_node(request, node_id))).data)


class InstanceListView(PlatformView):
    @endpoint(scope="read", response=InstanceSerializer(many=True), summary="Instances running a deployment")
    def get(self, request, org_id, deployment_id):
        deployment = deployment_get(workspace=self.workspace, deployment_id=deployment_id)
        return Response({"items": InstanceSerializer(deployment.instances.all(), many=True).data, "next_cursor": None})


class RuntimeLogsView(PlatformView):
    @endpoint(scope="read", summary="Output of a deployment's running instances (newest last)",
              parameters=[OpenApiParameter("deploymentId", str),
                          OpenApiParameter("lines", {"type": "integer", "minimum": 1},
                                           description="default 100, at most 1000 (larger values are clamped)")],
              response=inline_serializer("RuntimeLogs", {"lines": serializers.ListField()}))
    def get(self, request, org_id, project_id):
        project = self.project(project_id)
        count = query_int(request, "lines", default=100, maximum=1000)
        rows = runtime_log_tail(project=project, deployment_id=request.query_params.get("deploymentId"), count=count)
        return Response({"lines": [{"deployment_id": r.deployment_id, "instance_id": r.instance_id, "text": r.text,
                                    "at": r.created_at} for r in rows]})


class ImageDeploymentView(PlatformView):
    @endpoint(scope="deploy", status=201, request=ImageInput, response=DeploymentSerializer, errors=(402,),
              summary="Deploy an image: its tag is resolved to a digest now and run by the workspace's nodes that "
                      "report the `image` runtime (none online, a registry refusal or a limit: ends `error`)")
    def post(self, request, org_id, project_id):
        data = validated(ImageInput, request)
        deployment = images.deployment_from_image(project=self.project(project_id), image_ref=data["image_ref"],
                                                  env=data["env"], actor=request.user)
        return Response(DeploymentSerializer(deployment).data, status=201)


class RegistryCredentialsInput(InputSerializer):
    username = serializers.CharField(max_length=200, trim_whitespace=False)
    password = serializers.CharField(max_length=4096, trim_whitespace=False)


class RegistryCredentialsView(PlatformView):
    @endpoint(scope="admin", request=RegistryCredentialsInput, status=204, response=None,
              summary="Set or replace the registry credentials an image project pulls with (kept encrypted, never "
                      "answered; `registryCredentialsSet` on the project says whether there are some)")
    def put(self, request, org_id, project_id):
        data = validated(RegistryCredentialsInput, request)
        images.registry_credentials_set(project=self.project(project_id), actor=request.user,
                                        ip=self.ip, **data)
        return Response(status=204)

    @endpoint(scope="admin", status=204, response=None,
              summary="Remove the project's registry credentials (its registry is asked anonymously)")
    def delete(self, request, org_id, project_id):
        images.registry_credentials_remove(project=self.project(project_id), actor=request.user, ip=self.ip)
        return Response(status=204)
