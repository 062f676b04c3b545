"""Repository inspection: `/v1/framework/repo-info`, `/detect`, `/discover`.

Each call reads a remote repository with the git CLI (ls-remote or a shallow clone into
a temporary folder that is removed afterwards) and runs the same detector builds use.
The URL goes through the outbound guard (`git_urls`): https only (http where allowed), never a path on
this server; every refusal or failure is the same 400 `git_unreachable`.
Clones are rate-limited per user because each one costs network and disk.
"""
import tempfile
from pathlib import Path

from django.conf import settings
from rest_framework import serializers
from rest_framework.response import Response

from config import ratelimit
from config.errors import ValidationFailed
from config.inputs import InputSerializer, validated
from platform_app.api.base import PlatformView, endpoint
from platform_app.services.projects.projects import root_directory_check
from platform_app.services.projects.detection import detect, discover
from platform_app.services.providers.git_cli import git_branch_check, git_clone, git_ls_remote
from platform_app.services.providers.git_urls import git_remote_for_url

CLONES_PER_MINUTE = 20


class RepoInput(InputSerializer):
    url = serializers.CharField(max_length=500, help_text="An https URL of a Git repository (http where the "
                                "platform allows it); never a path or file:// URL")


class CloneInput(RepoInput):
    branch = serializers.CharField(max_length=200, required=False, help_text="Default: the default branch")
    root_directory = serializers.CharField(max_length=200, required=False, allow_blank=True)


class RepoInfoSerializer(serializers.Serializer):
    default_branch = serializers.CharField(allow_null=True)
    branches = serializers.ListField(child=serializers.CharField())
    head_commit = serializers.CharField(allow_null=True)


class DetectionSerializer(serializers.Serializer):
    framework = serializers.CharField()
    runtime = serializers.CharField()
    install_command = serializers.CharField(allow_blank=True)
    build_command = serializers.CharField(allow_blank=True)
    output_directory = serializers.CharField(allow_blank=True)
    start_command = serializers.CharField(allow_blank=True)
    evidence = serializers.ListField(child=serializers.CharField())


class DetectResultSerializer(DetectionSerializer):
    branch = serializers.CharField()
    commit_sha = serializers.CharField()
    root_directory = serializers.CharField(allow_blank=True)


class DiscoveredAppSerializer(DetectionSerializer):
    path = serializers.CharField()


class DiscoverResultSerializer(serializers.Serializer):
    branch = serializers.CharField()
    commit_sha = serializers.CharField()
    apps = DiscoveredAppSerializer(many=True)


def _clone(request, values: dict, tmp: str) -> tuple[Path, str, str]:
    ratelimit.consume(f"framework-clone:{request.user.pk}", CLONES_PER_MINUTE, 60,
                      "Too many repository inspections; try again in a minute.")
    remote = git_remote_for_url(values["url"])
    info = git_ls_remote(remote)
    branch = values.get("branch") or info.default_branch
    if not branch:
        raise ValidationFailed("The repository has no branches.", code="git_unreachable",
                               details={"url": ["Empty repository."]})
    git_branch_check(info, branch)
    dest = Path(tmp) / "repo"
    sha = git_clone(remote, branch=branch, dest=dest, timeout=settings.GIT_TIMEOUT_SECONDS)
    return dest, branch, sha


class RepoInfoView(PlatformView):
    @endpoint(scope="read", status=201, request=RepoInput, response=RepoInfoSerializer,
              summary="Default branch, branches and head commit of a repository (git ls-remote)")
    def post(self, request):
        data = validated(RepoInput, request)
        info = git_ls_remote(git_remote_for_url(data["url"]))
        return Response(RepoInfoSerializer(info).data, status=201)


class DetectView(PlatformView):
    @endpoint(scope="read", status=201, request=CloneInput, response=DetectResultSerializer, errors=(429,),
              summary="Detect the framework and build commands of a repository")
    def post(self, request):
        values = validated(CloneInput, request)
        root_directory = root_directory_check(values.get("root_directory", ""))
        with tempfile.TemporaryDirectory(prefix="detect-") as tmp:
            dest, branch, sha = _clone(request, values, tmp)
            target = dest / root_directory if root_directory else dest
            if not target.is_dir():
                raise ValidationFailed("The root directory does not exist in the repository.",
                                       details={"root_directory": ["Not found."]})
            found = detect(target)
        body = found.as_dict() | {"branch": branch, "commit_sha": sha, "root_directory": root_directory}
        return Response(DetectResultSerializer(body).data, status=201)


class DiscoverView(PlatformView):
    @endpoint(scope="read", status=201, request=CloneInput, response=DiscoverResultSerializer, errors=(429,),
              summary="Find the app roots of a monorepo, each with its detection")
    def post(self, request):
        data = validated(CloneInput, request)
        with tempfile.TemporaryDirectory(prefix="discover-") as tmp:
            dest, branch, sha = _clone(request, data, tmp)
            apps = [found.as_dict() | {"path": path} for path, found in discover(dest)]
        return Response(DiscoverResultSerializer({"branch": branch, "commit_sha": sha, "apps": apps}).data,
                        status=201)
