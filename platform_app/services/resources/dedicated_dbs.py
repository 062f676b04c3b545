"""Dedicated databases: a PostgreSQL database of the project's own, with backups, restore and branches
(docs/databases.md).

With DEDICATED_DB_PROVISIONER=postgres (the default) the platform makes a login role and a database of that role on
the cluster of DEDICATED_DB_POSTGRES_URL (dedicated_db_cluster.py); names and password are generated when the row is
made (the password shown once, kept encrypted) and a worker provisions them (`database_provision`:
`provisioning` → `ready`, or `error` with the reason, dropping what it made). With `external`, the row waits in
`provisioning` for an outside provisioner, which reports the connection details through the internal mark-ready
route. Work on the cluster runs on workers under a lease on the row (`lease_until`), so a redelivered or re-sent
job never runs twice at once. Builds and instances get the connection as managed variables (`database_managed`).
"""
import json
import logging
import re
import secrets
import tempfile
from datetime import timedelta
from pathlib import Path
from urllib.parse import quote

from django.conf import settings
from django.core.files import File
from django.core.files.storage import storages
from django.db import IntegrityError, transaction
from django.db.models import Max, Prefetch, Q
from django.utils import timezone

from config.errors import Conflict, NotFound, ValidationFailed
from config.jobs import enqueue, publish
from platform_app.models import DedicatedDatabase, DedicatedDatabaseBackup
from platform_app.sandbox import Endpoint
from platform_app.services.env.crypto import decrypt, encrypt
from platform_app.services.resources import dedicated_db_cluster as cluster
from platform_app.services.resources.variables import Managed, local_port

logger = logging.getLogger(__name__)

NAME = re.compile(r"[a-z][a-z0-9-]{0,38}[a-z0-9]|[a-z]")
VARIABLES = ("DATABASE_URL", "PGHOST", "PGPORT", "PGUSER", "PGPASSWORD", "PGDATABASE")
TASKS = "platform_app.tasks.dedicated_dbs"
Status, Provisioner = DedicatedDatabase.Status, DedicatedDatabase.Provisioner
Backup = DedicatedDatabaseBackup


# Rules ------------------------------------------------------------------------------------------

def _unavailable(setting: str, message: str) -> Conflict:
    return Conflict(message, code="addon_unavailable", details={"setting": setting})


def _provisioner() -> str:
    """The configured provisioner; 409 `addon_unavailable` naming the setting when dedicated databases are off."""
    provisioner = settings.DEDICATED_DB_PROVISIONER
    if provisioner not in Provisioner.values:
        raise _unavailable("DEDICATED_DB_PROVISIONER", "Dedicated databases are not available: "
                                                       "DEDICATED_DB_PROVISIONER must be postgres or external.")
    if provisioner == Provisioner.POSTGRES:
        _cluster_configured()
    return provisioner


def _cluster_configured() -> None:
    if not settings.DEDICATED_DB_POSTGRES_URL:
        raise _unavailable("DEDICATED_DB_POSTGRES_URL", "Dedicated databases are not available on this platform "
                                                        "(DEDICATED_DB_POSTGRES_URL is not set).")


def _check_name(name: str) -> str:
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise ValidationFailed("name must be 1-40 lower-case letters, digits and dashes, starting with a letter.",
                               details={"name": ["1-40 of a-z, 0-9 and -, starting with a letter, not ending with -."]})
    return name


def _on_cluster(database: DedicatedDatabase) -> None:
    """Restore and branch make databases: only on the platform's own cluster."""
    if database.provisioner != Provisioner.POSTGRES:
        raise Conflict("An externally provisioned database cannot be restored or branched by the platform.",
                       code="external_database")
    _cluster_configured()


def _ready(database: DedicatedDatabase) -> None:
    if database.status != Status.READY:
        raise Conflict(f"The database is {database.status}; this needs it ready.", code="database_not_ready",
                       details={"status": database.status})


def credentials_of(database: DedicatedDatabase) -> dict | None:
    """{host, port, database, user, password}, or None before they are known."""
    return json.loads(decrypt(database.credentials_encrypted)) if database.credentials_encrypted else None


def psql_url(credentials: dict) -> str:
    """The connection as a `psql` URL, reaching the cluster's own address."""
    c = credentials
    host = f"[{c['host']}]" if ":" in str(c["host"]) else c["host"]
    return (f"postgres://{quote(c['user'], safe='')}:{quote(c['password'], safe='')}@{host}:{c['port']}/"
            f"{quote(c['database'], safe='')}")


# Selectors --------------------------------------------------------------------------------------

def databases_list(*, project, recent: int = 0):
    """The project's databases; with `recent`, each with its newest backups in `recent_backups`."""
    databases = DedicatedDatabase.objects.filter(project=project).select_related("parent")
    if recent:
        newest = Backup.objects.order_by("-created_at", "-pk")[:recent]
        databases = databases.prefetch_related(Prefetch("backups", newest, to_attr="recent_backups"))
    return databases


def database_get(*, project, db_id: str, lock: bool = False) -> DedicatedDatabase:
    """A database of the project (locked for the transaction with `lock`); 404 otherwise."""
    rows = DedicatedDatabase.objects.select_for_update() if lock else DedicatedDatabase.objects
    database = rows.filter(project=project, pk=db_id).first()
    if database is None:
        raise NotFound("No such dedicated database.")
    return database


def backups_list(*, project, db_id: str):
    return Backup.objects.filter(database=database_get(project=project, db_id=db_id))


# Managed variables ------------------------------------------------------------------------------

def database_managed(*, project) -> list:
    """The managed variables (`Managed` items, services/resources/managed.py) the project's databases give it:
    DATABASE_URL and PGHOST/PGPORT/PGUSER/PGPASSWORD/PGDATABASE of each ready (or restoring: it still answers)
    database, oldest first, reaching it inside the sandbox at 127.0.0.1:<local port>, relayed to the cluster and
    let through only as its role to its database."""
    items = []
    rows = (DedicatedDatabase.objects.filter(project=project, status__in=(Status.READY, Status.RESTORING))
            .exclude(credentials_encrypted="").order_by("created_at", "pk"))
    for database in rows:
        c = credentials_of(database)
        port = local_port(database.pk)
        endpoint = Endpoint(c["host"], int(c["port"]), port,
                            guard={"kind": "postgres", "user": c["user"], "database": c["database"]})
        inside = {**c, "host": "127.0.0.1", "port": port}
        values = {"DATABASE_URL": psql_url(inside), "PGHOST": "127.0.0.1", "PGPORT": str(port), "PGUSER": c["user"],
                  "PGPASSWORD": c["password"], "PGDATABASE": c["database"]}
        items += [Managed(key, values[key], source=f"dedicated-db:{database.pk}", prefix=database.name,
                          endpoint=endpoint) for key in VARIABLES]
    return items


# Create, branch, delete -------------------------------------------------------------------------

def _new_row(project, name: str, provisioner: str, parent: DedicatedDatabase | None = None
             ) -> tuple[DedicatedDatabase, dict | None]:
    """A row (under the project's lock: the name and the per-project limit) with its generated names and
    password; the credentials, or None for an outside provisioner."""
    type(project).objects.select_for_update().filter(pk=project.pk).first()
    if DedicatedDatabase.objects.filter(project=project).count() >= settings.DEDICATED_DB_MAX_PER_PROJECT:
        raise Conflict(f"A project has at most {settings.DEDICATED_DB_MAX_PER_PROJECT} dedicated databases.",
                       code="limit_reached", details={"limit": settings.DEDICATED_DB_MAX_PER_PROJECT})
    if DedicatedDatabase.objects.filter(project=project, name=name).exists():
        raise Conflict(f"The project already has a database named {name}.", code="name_taken",
                       details={"name": ["Taken."]})
    database = DedicatedDatabase(project=project, name=name, provisioner=provisioner, parent=parent)
    credentials = None
    if provisioner == Provisioner.POSTGRES:
        role = f"{settings.DEDICATED_DB_NAME_PREFIX}{database.pk.removeprefix('ddb_')}"
        host, port = cluster.server_address()
        credentials = {"host": host, "port": port, "database": role, "user": role,
                       "password": secrets.token_urlsafe(24)}
        database.role_name = database.database_name = role
        database.credentials_encrypted = encrypt(json.dumps(credentials))
    try:
        with transaction.atomic():
            database.save(force_insert=True)
    except IntegrityError:
        raise Conflict(f"The project already has a database named {name}.", code="name_taken",
                       details={"name": ["Taken."]})
    if provisioner == Provisioner.POSTGRES:
        enqueue(f"{TASKS}.database_provision", database.pk)
    return database, credentials


@transaction.atomic
def database_create(*, project, name: str) -> tuple[DedicatedDatabase, dict | None]:
    """A new database, `provisioning`; its credentials (shown once) when the platform makes it."""
    _check_name(name)
    return _new_row(project, name, _provisioner())


@transaction.atomic
def database_branch(*, project, db_id: str, name: str) -> tuple[DedicatedDatabase, dict]:
    """A copy of a ready database as a database of its own (its own role), `parent` the source."""
    _check_name(name)
    source = database_get(project=project, db_id=db_id, lock=True)
    _on_cluster(source)
    _ready(source)
    return _new_row(project, name, Provisioner.POSTGRES, parent=source)


@transaction.atomic
def database_delete(*, project, db_id: str) -> None:
    """The row and its backups' rows now; its databases, role and backup files by a worker once this commits.
    A job still running on it finds the row gone and drops what it made."""
    database = database_get(project=project, db_id=db_id, lock=True)
    names = [n for n in (database.database_name, database.next_database_name, database.retired_database_name) if n]
    role = database.role_name if database.provisioner == Provisioner.POSTGRES else ""
    database.delete()
    enqueue(f"{TASKS}.database_teardown", db_id, role, names if role else [])


def database_teardown(*, db_id: str, role: str, databases: list[str]) -> None:
    """Drop what a deleted database had: its databases (connections ended), its role, its backup files."""
    if role:
        try:
            for name in databases:
                cluster.database_drop(name)
            cluster.role_drop(role)
        except cluster.ClusterError as exc:
            logger.warning("Dropping dedicated database %s left something (the sweep retries): %s", db_id, exc)
    _files_delete(db_id)


def _files_delete(db_id: str) -> None:
    storage = storages["artifacts"]
    folder = f"backups/{db_id}"
    try:
        _, files = storage.listdir(folder)
    except (FileNotFoundError, NotADirectoryError):
        return
    for name in files:
        storage.delete(f"{folder}/{name}")


# Provisioning (workers) -------------------------------------------------------------------------

def _claim(db_id: str, status: str) -> DedicatedDatabase | None:
    """Take the row for one worker (its lease lasts as long as the longest command may), or None."""
    now = timezone.now()
    lease = now + timedelta(seconds=settings.DEDICATED_DB_COMMAND_TIMEOUT_SECONDS + 60)
    taken = (DedicatedDatabase.objects.filter(pk=db_id, status=status, provisioner=Provisioner.POSTGRES)
             .filter(Q(lease_until__isnull=True) | Q(lease_until__lt=now)).update(lease_until=lease))
    return DedicatedDatabase.objects.select_related("parent").filter(pk=db_id).first() if taken else None


def _copy(source: DedicatedDatabase, database: DedicatedDatabase) -> None:
    """Fill the branch's new database from its source: a template copy, or, while the source has connections
    (which a template copy cannot have), a dump restored as the branch's role."""
    try:
        cluster.database_create(name=database.database_name, owner=database.role_name, template=source.database_name)
    except cluster.TemplateInUse:
        cluster.database_create(name=database.database_name, owner=database.role_name)
        with tempfile.TemporaryDirectory(prefix="ddb-branch-") as folder:
            path = Path(folder) / "source.dump"
            cluster.dump(conninfo=cluster.admin_conninfo(source.database_name), path=path)
            cluster.restore(path=path, database=database.database_name, role=database.role_name)
    else:
        cluster.ownership_move(database=database.database_name, old=source.role_name, new=database.role_name)


def database_provision(*, db_id: str) -> str | None:
    """Make the role and the database (a copy of the parent for a branch): `ready`, or `error` with the reason
    and nothing left behind. Leftovers of an earlier attempt on the same names are dropped first."""
    database = _claim(db_id, Status.PROVISIONING)
    if database is None:
        return None
    role, name = database.role_name, database.database_name
    credentials = credentials_of(database)
    try:
        cluster.database_drop(name)
        cluster.role_drop(role)
        cluster.role_create(role=role, password=credentials["password"])
        if database.parent_id:
            source = DedicatedDatabase.objects.filter(pk=database.parent_id).first()
            if source is None or source.status not in (Status.READY, Status.RESTORING) or not source.database_name:
                raise cluster.ClusterError("The database it branches from is no longer ready.")
            _copy(source, database)
        else:
            cluster.database_create(name=name, owner=role)
        size = cluster.database_size(name)
    except cluster.ClusterError as exc:
        _drop_quietly([name], role)
        DedicatedDatabase.objects.filter(pk=db_id).update(status=Status.ERROR, error_message=str(exc),
                                                          lease_until=None, updated_at=timezone.now())
        return Status.ERROR
    with transaction.atomic():
        row = DedicatedDatabase.objects.select_for_update().filter(pk=db_id).first()
        if row is None:  # deleted meanwhile
            transaction.on_commit(lambda: _drop_quietly([name], role))
            return None
        row.status, row.error_message, row.size_bytes, row.lease_until = Status.READY, "", size, None
        row.updated_at = timezone.now()
        row.save(update_fields=["status", "error_message", "size_bytes", "lease_until", "updated_at"])
    return Status.READY


def _drop_quietly(databases: list[str], role: str = "") -> None:
    try:
        for name in databases:
            cluster.database_drop(name)
        if role:
            cluster.role_drop(role)
    except cluster.ClusterError as exc:
        logger.warning("Could not drop %s / %s (the sweep retries): %s", databases, role, exc)


# The outside provisioner ------------------------------------------------------------------------

HOST = re.compile(r"[A-Za-z0-9.:_-]{1,253}|\[[0-9A-Fa-f:.]{2,45}\]")


@transaction.atomic
def database_mark_ready(*, db_id: str, host: str, port: int, database: str, user: str, password: str
                        ) -> DedicatedDatabase:
    """An outside provisioner reports the connection details of a database it made (again, to change them)."""
    row = DedicatedDatabase.objects.select_for_update().filter(pk=db_id).first()
    if row is None:
        raise NotFound("No such dedicated database.")
    if row.provisioner != Provisioner.EXTERNAL:
        raise Conflict("This database is provisioned by the platform.", code="not_external")
    if not HOST.fullmatch(host):
        raise ValidationFailed("host must be a host name or an IP address.", details={"host": ["Invalid host."]})
    if not 1 <= port <= 65535:
        raise ValidationFailed("port must be between 1 and 65535.", details={"port": ["Between 1 and 65535."]})
    row.credentials_encrypted = encrypt(json.dumps({"host": host.strip("[]"), "port": port, "database": database,
                                                    "user": user, "password": password}))
    row.status, row.error_message, row.updated_at = Status.READY, "", timezone.now()
    row.save(update_fields=["credentials_encrypted", "status", "error_message", "updated_at"])
    return row


# Backups ----------------------------------------------------------------------------------------

def _backup_new(database: DedicatedDatabase, kind: str) -> DedicatedDatabaseBackup:
    backup = Backup(database=database, kind=kind)
    backup.storage_name = f"backups/{database.pk}/{backup.pk}.dump"
    backup.save(force_insert=True)
    return backup


@transaction.atomic
def backup_create(*, project, db_id: str) -> DedicatedDatabaseBackup:
    """A manual backup of a ready database, made by a worker (`pending` → `done` or `failed`)."""
    database = database_get(project=project, db_id=db_id, lock=True)
    if database.provisioner == Provisioner.POSTGRES:
        _cluster_configured()
    _ready(database)
    backup = _backup_new(database, Backup.Kind.MANUAL)
    enqueue(f"{TASKS}.database_backup", backup.pk)
    return backup


def _conninfo(database: DedicatedDatabase) -> dict:
    """How pg_dump reaches a database: the admin on the platform's cluster, its own credentials elsewhere."""
    if database.provisioner == Provisioner.POSTGRES:
        return cluster.admin_conninfo(database.database_name)
    c = credentials_of(database)
    return {"host": c["host"], "port": c["port"], "dbname": c["database"], "user": c["user"],
            "password": c["password"]}


def database_backup(*, backup_id: str) -> str | None:
    """Dump the database into artifact storage, record the size (and the database's), apply retention."""
    backup = Backup.objects.select_related("database").filter(pk=backup_id, status=Backup.Status.PENDING).first()
    if backup is None:
        return None
    database = backup.database
    storage = storages["artifacts"]
    try:
        with tempfile.TemporaryDirectory(prefix="ddb-backup-") as folder:
            path = Path(folder) / "backup.dump"
            size = cluster.dump(conninfo=_conninfo(database), path=path)
            with open(path, "rb") as stream:
                storage.delete(backup.storage_name)  # a redelivered job replaces, never renames
                stored = storage.save(backup.storage_name, File(stream))
        ours = database.provisioner == Provisioner.POSTGRES
        database_size = cluster.database_size(database.database_name) if ours else None
    except (cluster.ClusterError, OSError) as exc:
        Backup.objects.filter(pk=backup.pk).update(status=Backup.Status.FAILED, error=str(exc)[:2000],
                                                   finished_at=timezone.now())
        return Backup.Status.FAILED
    done = Backup.objects.filter(pk=backup.pk).update(status=Backup.Status.DONE, size_bytes=size, storage_name=stored,
                                                      finished_at=timezone.now())
    if not done:  # the database was deleted meanwhile
        storage.delete(stored)
        return None
    DedicatedDatabase.objects.filter(pk=database.pk).update(size_bytes=database_size if database_size is not None
                                                            else size)
    backups_prune(db_id=database.pk, kind=backup.kind)
    return Backup.Status.DONE


def backups_prune(*, db_id: str, kind: str) -> int:
    """Keep the newest DEDICATED_DB_BACKUP_KEEP scheduled (DEDICATED_DB_MANUAL_BACKUP_KEEP manual) finished
    backups; delete older ones and their files (not one a restore is reading)."""
    scheduled = kind == Backup.Kind.SCHEDULED
    keep = settings.DEDICATED_DB_BACKUP_KEEP if scheduled else settings.DEDICATED_DB_MANUAL_BACKUP_KEEP
    in_use = set(DedicatedDatabase.objects.filter(pk=db_id).values_list("restoring_backup_id", flat=True))
    old = [b for b in Backup.objects.filter(database_id=db_id, kind=kind).exclude(status=Backup.Status.PENDING)
           .order_by("-created_at", "-pk")[keep:] if b.pk not in in_use]
    storage = storages["artifacts"]
    for backup in old:
        storage.delete(backup.storage_name)
    Backup.objects.filter(pk__in=[b.pk for b in old]).delete()
    return len(old)


# Restore ----------------------------------------------------------------------------------------

@transaction.atomic
def database_restore(*, project, db_id: str, backup_id: str) -> DedicatedDatabase:
    """Restore a finished backup of this database into a new database (`restoring` meanwhile); once it is
    filled the row's credentials point at it and the database it replaces is kept for
    DEDICATED_DB_RESTORE_KEEP_HOURS (or until the next restore)."""
    database = database_get(project=project, db_id=db_id, lock=True)
    backup = Backup.objects.filter(database=database, pk=backup_id).first()
    if backup is None:
        raise NotFound("No such backup of this database.", details={"backupId": ["Unknown backup."]})
    _on_cluster(database)
    _ready(database)
    if backup.status != Backup.Status.DONE:
        raise Conflict(f"The backup is {backup.status}; only a finished backup can be restored.",
                       code="backup_not_ready", details={"status": backup.status})
    database.next_database_name = f"{database.role_name}_{secrets.token_hex(3)}"
    database.status, database.restoring_backup, database.error_message = Status.RESTORING, backup, ""
    database.updated_at = timezone.now()
    database.save(update_fields=["next_database_name", "status", "restoring_backup", "error_message", "updated_at"])
    enqueue(f"{TASKS}.database_restore_run", database.pk)
    return database


def database_restore_run(*, db_id: str) -> str | None:
    """The restore itself (a worker). A failure drops the new database and leaves the database as it was,
    `ready`, with `errorMessage` saying why."""
    database = _claim(db_id, Status.RESTORING)
    if database is None:
        return None
    backup, new = database.restoring_backup, database.next_database_name
    try:
        if backup is None:
            raise cluster.ClusterError("The backup was deleted before the restore began.")
        cluster.database_drop(new)
        cluster.database_create(name=new, owner=database.role_name)
        with tempfile.TemporaryDirectory(prefix="ddb-restore-") as folder:
            path = Path(folder) / "backup.dump"
            with storages["artifacts"].open(backup.storage_name, "rb") as source, open(path, "wb") as target:
                for chunk in iter(lambda: source.read(1 << 20), b""):
                    target.write(chunk)
            cluster.restore(path=path, database=new, role=database.role_name)
        size = cluster.database_size(new)
    except (cluster.ClusterError, OSError) as exc:
        _drop_quietly([new])
        reason = f"The restore from {database.restoring_backup_id or 'a deleted backup'} failed: {exc}"
        DedicatedDatabase.objects.filter(pk=db_id).update(status=Status.READY, error_message=reason[:2000],
                                                          next_database_name="", restoring_backup=None,
                                                          lease_until=None, updated_at=timezone.now())
        return Status.READY
    with transaction.atomic():
        row = DedicatedDatabase.objects.select_for_update().filter(pk=db_id).first()
        if row is None:
            transaction.on_commit(lambda: _drop_quietly([new]))
            return None
        previous = row.retired_database_name
        credentials = {**credentials_of(row), "database": new}
        row.retired_database_name, row.retired_at = row.database_name, timezone.now()
        row.database_name, row.next_database_name, row.restoring_backup = new, "", None
        row.credentials_encrypted = encrypt(json.dumps(credentials))
        row.status, row.error_message, row.size_bytes, row.lease_until = Status.READY, "", size, None
        row.updated_at = timezone.now()
        row.save()
        if previous:
            transaction.on_commit(lambda: _drop_quietly([previous]))
    return Status.READY


# The sweep (beat) -------------------------------------------------------------------------------

def dedicated_dbs_sweep(*, now=None) -> dict:
    """Beat: schedule due backups, drop databases restores replaced long enough ago, send lost jobs again, fail
    backups whose worker vanished, drop what the cluster holds for rows that are gone."""
    now = now or timezone.now()
    report = {"backups": backups_schedule(now=now), "retired": _retired_drop(now), "requeued": _requeue_lost(now),
              "stale_backups": _stale_backups_fail(now), "orphans": 0}
    if settings.DEDICATED_DB_POSTGRES_URL:
        try:
            report["orphans"] = orphans_drop()
        except cluster.ClusterError as exc:
            logger.warning("The dedicated database sweep could not reach the cluster: %s", exc)
    return report


def backups_schedule(*, now=None) -> int:
    """A scheduled backup of every ready database whose newest one (or whose creation) is
    DEDICATED_DB_BACKUP_INTERVAL_HOURS old."""
    now = now or timezone.now()
    due_before = now - timedelta(hours=settings.DEDICATED_DB_BACKUP_INTERVAL_HOURS)
    candidates = (DedicatedDatabase.objects.filter(status=Status.READY, created_at__lte=due_before)
                  .exclude(credentials_encrypted="")
                  .annotate(last=Max("backups__created_at", filter=Q(backups__kind=Backup.Kind.SCHEDULED)))
                  .filter(Q(last__isnull=True) | Q(last__lte=due_before)).values_list("pk", flat=True))
    if not settings.DEDICATED_DB_POSTGRES_URL:
        candidates = candidates.filter(provisioner=Provisioner.EXTERNAL)
    made = 0
    for db_id in list(candidates):
        with transaction.atomic():
            database = DedicatedDatabase.objects.select_for_update().filter(pk=db_id, status=Status.READY).first()
            recent = Backup.objects.filter(database_id=db_id, kind=Backup.Kind.SCHEDULED, created_at__gt=due_before)
            if database is None or recent.exists():
                continue  # another sweep was first
            backup = _backup_new(database, Backup.Kind.SCHEDULED)
            enqueue(f"{TASKS}.database_backup", backup.pk)
            made += 1
    return made


def _retired_drop(now) -> int:
    cutoff = now - timedelta(hours=settings.DEDICATED_DB_RESTORE_KEEP_HOURS)
    dropped = 0
    for database in DedicatedDatabase.objects.filter(retired_at__lte=cutoff).exclude(retired_database_name=""):
        try:
            cluster.database_drop(database.retired_database_name)
        except cluster.ClusterError as exc:
            logger.warning("Could not drop %s: %s", database.retired_database_name, exc)
            continue
        dropped += DedicatedDatabase.objects.filter(
            pk=database.pk, retired_database_name=database.retired_database_name).update(
            retired_database_name="", retired_at=None)
    return dropped


def _requeue_lost(now) -> int:
    """Provisioning and restores whose job never reached a worker (60 s without a claim) or whose worker's lease
    ran out: sent again (the lease keeps a second run from starting while one is under way)."""
    lost = (DedicatedDatabase.objects.filter(provisioner=Provisioner.POSTGRES,
                                             status__in=(Status.PROVISIONING, Status.RESTORING))
            .filter(Q(lease_until__lt=now) | Q(lease_until__isnull=True, updated_at__lt=now - timedelta(seconds=60)))
            .values_list("pk", "status"))
    for db_id, status in lost:
        task = "database_provision" if status == Status.PROVISIONING else "database_restore_run"
        publish(f"{TASKS}.{task}", (db_id,))
    return len(lost)


def _stale_backups_fail(now) -> int:
    cutoff = now - timedelta(seconds=2 * settings.DEDICATED_DB_COMMAND_TIMEOUT_SECONDS)
    return Backup.objects.filter(status=Backup.Status.PENDING, created_at__lt=cutoff).update(
        status=Backup.Status.FAILED, error="The worker making it stopped.", finished_at=now)


def orphans_drop() -> int:
    """Drop the databases and roles of this platform's name shape that no row holds (a project deleted with its
    databases, a drop that failed), and backup folders of databases that are gone."""
    prefix = settings.DEDICATED_DB_NAME_PREFIX
    shape = re.compile(re.escape(prefix) + r"[a-z0-9]{20}(_[0-9a-f]{6})?")
    databases, roles = cluster.names_like(prefix)
    databases = [n for n in databases if shape.fullmatch(n)]
    roles = [n for n in roles if shape.fullmatch(n) and "_" not in n[len(prefix):]]
    held = DedicatedDatabase.objects.filter(Q(role_name__in=roles) | Q(database_name__in=databases)
                                            | Q(next_database_name__in=databases)
                                            | Q(retired_database_name__in=databases))
    kept = set()
    for row in held.values_list("role_name", "database_name", "next_database_name", "retired_database_name"):
        kept.update(row)
    gone = [n for n in databases if n not in kept]
    _drop_quietly(gone)
    for role in roles:
        if role not in kept:
            _drop_quietly([], role)
    _orphan_files_delete()
    return len(gone) + len([r for r in roles if r not in kept])


def _orphan_files_delete() -> None:
    storage = storages["artifacts"]
    try:
        folders, _ = storage.listdir("backups")
    except (FileNotFoundError, NotADirectoryError):
        return
    present = set(DedicatedDatabase.objects.filter(pk__in=folders).values_list("pk", flat=True))
    for folder in folders:
        if folder.startswith("ddb_") and folder not in present:
            _files_delete(folder)
