"""Dedicated databases (P = /v1/orgs/{orgId}/projects/{projectId}) and the outside provisioner's internal
mark-ready route (docs/databases.md)."""
from django.urls import path
from drf_spectacular.utils import extend_schema_field, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from config.inputs import InputSerializer, validated
from config.serializers import ModelSerializer
from platform_app.api.automation.alerts import InternalTokenAuthentication, internal_endpoint
from platform_app.api.base import PlatformView, cursor_page, endpoint, field_with_schema
from platform_app.models import DedicatedDatabase, DedicatedDatabaseBackup
from platform_app.services.resources import dedicated_dbs as services
from platform_app.services.resources.dedicated_db_variables import database_env_names, database_env_names_planned

NAME = field_with_schema({"type": "string", "pattern": "^[a-z]([a-z0-9-]{0,38}[a-z0-9])?$"})


class DedicatedDatabaseSerializer(ModelSerializer):
    engine = serializers.SerializerMethodField()
    status = serializers.CharField(read_only=True, help_text="`provisioning`, `ready`, `restoring` or `error` "
                                                             "(`errorMessage` says why; after a failed restore it is "
                                                             "`ready` and says why too)")
    provisioner = serializers.CharField(read_only=True, help_text="`postgres` (the platform's cluster) or `external`")
    parent_id = serializers.CharField(read_only=True, allow_null=True, help_text="the database a branch copies")
    size_bytes = serializers.IntegerField(read_only=True, allow_null=True, help_text="as of its last backup")
    env_vars = serializers.SerializerMethodField(help_text="the managed variables it gives builds and instances")

    class Meta:
        model = DedicatedDatabase
        fields = ("id", "name", "engine", "status", "provisioner", "parent_id", "error_message", "size_bytes",
                  "env_vars", "created_at")

    def get_engine(self, obj) -> str:
        return "postgres"

    def get_env_vars(self, obj) -> list[str]:
        return self.context.get("env_names", {}).get(obj.pk, [])


Credentials = inline_serializer("DedicatedDatabaseCredentials", {
    "host": serializers.CharField(), "port": serializers.IntegerField(), "database": serializers.CharField(),
    "user": serializers.CharField(), "password": serializers.CharField(), "url": serializers.CharField()})


class DedicatedDatabaseCreatedSerializer(DedicatedDatabaseSerializer):
    credentials = serializers.SerializerMethodField(
        help_text="Shown only in this answer (null when an outside provisioner makes it): the cluster's own address. "
                  "Builds and instances get the managed variables instead.")

    class Meta(DedicatedDatabaseSerializer.Meta):
        fields = (*DedicatedDatabaseSerializer.Meta.fields, "credentials")

    @extend_schema_field(Credentials)
    def get_credentials(self, obj) -> dict | None:
        c = self.context.get("credentials")
        return {**c, "url": services.psql_url(c)} if c else None


class BackupSerializer(ModelSerializer):
    kind = serializers.CharField(read_only=True, help_text="`scheduled` or `manual`")
    status = serializers.CharField(read_only=True, help_text="`pending` (a worker is dumping it), `done` or `failed` "
                                                             "(`error` says why)")

    class Meta:
        model = DedicatedDatabaseBackup
        fields = ("id", "kind", "status", "size_bytes", "error", "created_at", "finished_at")


class DatabaseInput(InputSerializer):
    name = NAME(max_length=40, help_text="Lower-case letters, digits and dashes; prefixes its variables' names "
                                         "when another resource holds them.")


class RestoreInput(InputSerializer):
    backup_id = serializers.CharField(max_length=40, help_text="A finished backup of this database.")


class MarkReadyInput(InputSerializer):
    host = serializers.CharField(max_length=255)
    port = serializers.IntegerField(min_value=1, max_value=65535)
    database = serializers.CharField(max_length=63)
    user = serializers.CharField(max_length=63)
    password = serializers.CharField(max_length=1024, trim_whitespace=False)


def _answer(project, database, status=200):
    context = {"env_names": database_env_names(project=project)}
    return Response(DedicatedDatabaseSerializer(database, context=context).data, status=status)


def _created(project, database, credentials):
    """A creating answer: the credentials (once) and the variable names it will get once ready."""
    context = {"credentials": credentials,
               "env_names": {database.pk: database_env_names_planned(project=project, database=database)}}
    return Response(DedicatedDatabaseCreatedSerializer(database, context=context).data, status=201)


class DedicatedDatabaseListView(PlatformView):
    @endpoint(scope="read", response=DedicatedDatabaseSerializer(many=True), summary="Dedicated databases of a project")
    def get(self, request, org_id, project_id):
        project = self.project(project_id)
        return cursor_page(request, services.databases_list(project=project), DedicatedDatabaseSerializer,
                           context={"env_names": database_env_names(project=project)})

    @endpoint(scope="admin", status=201, request=DatabaseInput, response=DedicatedDatabaseCreatedSerializer,
              summary="Create a dedicated database (its credentials are shown once)", errors=(409,),
              description="`provisioning` until a worker has made it (or an outside provisioner reported it). 409 "
                          "`addon_unavailable` naming the setting when this platform offers none, `name_taken`, "
                          "`limit_reached`.")
    def post(self, request, org_id, project_id):
        v = validated(DatabaseInput, request)
        project = self.project(project_id)
        return _created(project, *services.database_create(project=project, name=v["name"]))


class DedicatedDatabaseDetailView(PlatformView):
    @endpoint(scope="read", response=DedicatedDatabaseSerializer, summary="A dedicated database")
    def get(self, request, org_id, project_id, db_id):
        project = self.project(project_id)
        return _answer(project, services.database_get(project=project, db_id=db_id))

    @endpoint(scope="admin", response=inline_serializer("DedicatedDatabaseDeleted",
                                                        {"deleted": serializers.BooleanField()}),
              summary="Delete a dedicated database with its role and backups")
    def delete(self, request, org_id, project_id, db_id):
        services.database_delete(project=self.project(project_id), db_id=db_id)
        return Response({"deleted": True})


class BackupListView(PlatformView):
    @endpoint(scope="read", response=BackupSerializer(many=True), summary="Backups of a dedicated database")
    def get(self, request, org_id, project_id, db_id):
        return cursor_page(request, services.backups_list(project=self.project(project_id), db_id=db_id),
                           BackupSerializer)

    @endpoint(scope="admin", status=201, response=BackupSerializer, summary="Back up now", errors=(409,),
              description="A manual backup (`pending` until a worker has dumped it). 409 `database_not_ready`.")
    def post(self, request, org_id, project_id, db_id):
        backup = services.backup_create(project=self.project(project_id), db_id=db_id)
        return Response(BackupSerializer(backup).data, status=201)


class RestoreView(PlatformView):
    @endpoint(scope="admin", status=201, request=RestoreInput, response=DedicatedDatabaseSerializer, errors=(409,),
              summary="Restore a backup of this database",
              description="Into a new database (`restoring` meanwhile), which the credentials then open; the "
                          "replaced database is kept DEDICATED_DB_RESTORE_KEEP_HOURS. A backup of another "
                          "database is 404.")
    def post(self, request, org_id, project_id, db_id):
        v = validated(RestoreInput, request)
        project = self.project(project_id)
        return _answer(project, services.database_restore(project=project, db_id=db_id, backup_id=v["backup_id"]),
                       status=201)


class BranchView(PlatformView):
    @endpoint(scope="admin", status=201, request=DatabaseInput, response=DedicatedDatabaseCreatedSerializer,
              errors=(409,), summary="Branch a dedicated database (the new one's credentials are shown once)",
              description="A copy as a database of its own, with its own role; `parentId` names the source.")
    def post(self, request, org_id, project_id, db_id):
        v = validated(DatabaseInput, request)
        project = self.project(project_id)
        return _created(project, *services.database_branch(project=project, db_id=db_id, name=v["name"]))


class MarkReadyView(PlatformView):
    authentication_classes = [InternalTokenAuthentication]

    @internal_endpoint(request=MarkReadyInput, responses={200: DedicatedDatabaseSerializer},
                       summary="Report an externally provisioned database ready (internal)",
                       description="For the outside provisioner (DEDICATED_DB_PROVISIONER=external): "
                                   "`Authorization: Bearer <INTERNAL_API_TOKEN>` (user and API tokens: 401). The "
                                   "connection details are stored encrypted and reach the project only as managed "
                                   "variables; calling again replaces them.")
    def post(self, request, db_id):
        v = validated(MarkReadyInput, request)
        database = services.database_mark_ready(db_id=db_id, **v)
        return _answer(database.project, database)


P = "orgs/<str:org_id>/projects/<str:project_id>/dedicated-dbs"

urlpatterns = [
    path(P, DedicatedDatabaseListView.as_view()),
    path(f"{P}/<str:db_id>", DedicatedDatabaseDetailView.as_view()),
    path(f"{P}/<str:db_id>/backups", BackupListView.as_view()),
    path(f"{P}/<str:db_id>/restore", RestoreView.as_view()),
    path(f"{P}/<str:db_id>/branch", BranchView.as_view()),
    path("internal/dedicated-dbs/<str:db_id>/mark-ready", MarkReadyView.as_view()),
]
