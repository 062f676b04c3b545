"""Dedicated databases: a PostgreSQL database of a project's own, and its backups (docs/databases.md)."""
from django.db import models
from django.db.models import Q
from django.utils.timezone import now

from config.ids import PrefixedIdField

__all__ = ("DedicatedDatabase", "DedicatedDatabaseBackup")


class DedicatedDatabase(models.Model):
    """A database and a login role of its own on the platform's cluster (`postgres`), or one an outside
    provisioner made and reported (`external`). The names are generated, never the user's text; the connection
    details (host, port, database, user, password) are kept Fernet-encrypted with the env var keys. A branch is
    a database of its own whose `parent` it was copied from."""

    class Status(models.TextChoices):
        PROVISIONING = "provisioning"
        READY = "ready"
        RESTORING = "restoring"
        ERROR = "error"

    class Provisioner(models.TextChoices):
        POSTGRES = "postgres", "the platform's cluster"
        EXTERNAL = "external", "an outside provisioner"

    id = PrefixedIdField(prefix="ddb")
    project = models.ForeignKey("platform_app.Project", on_delete=models.CASCADE, related_name="dedicated_databases")
    name = models.CharField(max_length=40, help_text="the project's name for it: lower case, digits, dashes")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PROVISIONING)
    provisioner = models.CharField(max_length=16, choices=Provisioner.choices, default=Provisioner.POSTGRES)
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="branches",
                               help_text="the database this branch was copied from")
    role_name = models.CharField(max_length=63, blank=True, help_text="its login role on the platform's cluster")
    database_name = models.CharField(max_length=63, blank=True, help_text="the database the credentials open")
    next_database_name = models.CharField(max_length=63, blank=True,
                                          help_text="the database a running restore fills")
    restoring_backup = models.ForeignKey("platform_app.DedicatedDatabaseBackup", null=True, blank=True,
                                         on_delete=models.SET_NULL, related_name="+")
    retired_database_name = models.CharField(max_length=63, blank=True,
                                             help_text="what the last restore replaced, dropped later")
    retired_at = models.DateTimeField(null=True, blank=True)
    credentials_encrypted = models.TextField(blank=True)
    error_message = models.TextField(blank=True)
    size_bytes = models.BigIntegerField(null=True, blank=True, help_text="as of its last backup")
    lease_until = models.DateTimeField(null=True, blank=True, help_text="a worker is provisioning or restoring it")
    created_at = models.DateTimeField(default=now)
    updated_at = models.DateTimeField(default=now)

    class Meta:
        ordering = ("-created_at",)
        constraints = [
            models.UniqueConstraint(fields=["project", "name"], name="dedicated_db_name_per_project"),
            models.UniqueConstraint(fields=["database_name"], condition=~Q(database_name=""),
                                    name="dedicated_db_database_name_unique"),
            models.UniqueConstraint(fields=["role_name"], condition=~Q(role_name=""),
                                    name="dedicated_db_role_name_unique"),
            models.CheckConstraint(condition=Q(status__in=["provisioning", "ready", "restoring", "error"]),
                                   name="dedicated_db_status_known"),
            models.CheckConstraint(condition=Q(provisioner__in=["postgres", "external"]),
                                   name="dedicated_db_provisioner_known"),
        ]

    def __str__(self):
        return f"{self.project}:{self.name}"


class DedicatedDatabaseBackup(models.Model):
    """A `pg_dump --format=custom` of a dedicated database, kept in artifact storage under
    `backups/<database id>/<backup id>.dump`: scheduled (beat) or manual."""

    class Kind(models.TextChoices):
        SCHEDULED = "scheduled"
        MANUAL = "manual"

    class Status(models.TextChoices):
        PENDING = "pending"
        DONE = "done"
        FAILED = "failed"

    id = PrefixedIdField(prefix="dbk")
    database = models.ForeignKey(DedicatedDatabase, on_delete=models.CASCADE, related_name="backups")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    size_bytes = models.BigIntegerField(default=0)
    storage_name = models.CharField(max_length=255, blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(default=now)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ("-created_at",)
        indexes = [models.Index(fields=["database", "kind", "-created_at"])]
        constraints = [
            models.CheckConstraint(condition=Q(kind__in=["scheduled", "manual"]), name="dedicated_db_backup_kind"),
            models.CheckConstraint(condition=Q(status__in=["pending", "done", "failed"]),
                                   name="dedicated_db_backup_status"),
            models.CheckConstraint(condition=Q(size_bytes__gte=0), name="dedicated_db_backup_size"),
        ]

    def __str__(self):
        return f"{self.database_id}:{self.kind} {self.created_at:%Y-%m-%d %H:%M}"
