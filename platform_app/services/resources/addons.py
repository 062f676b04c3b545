"""Add-ons: a PostgreSQL database or a Redis key space on a shared server, provisioned for a project
(docs/resources.md).

- `postgres`: a login role and a database it owns on the cluster of ADDONS_POSTGRES_URL, with a random password,
  a connection limit, no other right, and CONNECT revoked from everyone else.
- `redis`: an ACL user on the server of ADDONS_REDIS_URL, allowed only the keys and channels under its own prefix
  and an explicit list of commands on them (redis_rules.py).

Provisioning runs in a task (`provisioning` → `ready`, or `error` with the reason, having dropped what it made).
The credentials are stored encrypted and reach builds and instances only as managed variables pointing at the
sandbox's own loopback, where the node relays to the server through the protocol guard that keeps the login to
this role or user (platform_app/sandbox/guards.py). Deleting removes the variables at once and drops the data
ADDONS_DELETE_GRACE_HOURS later.
"""
import json
import logging
import re
import secrets
from datetime import timedelta
from urllib.parse import quote, urlsplit, urlunsplit

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from config.errors import Conflict, NotFound, ValidationFailed
from config.jobs import enqueue
from platform_app.models import Addon
from platform_app.sandbox import Endpoint
from platform_app.services.env.crypto import decrypt, encrypt
from platform_app.services.resources.redis_rules import SUBCOMMANDS, redis_acl_rules, redis_known_commands
from platform_app.services.resources.variables import Managed, local_port
from platform_app.services.teams.audit import audit_record

logger = logging.getLogger(__name__)
KINDS = {"postgres": "ADDONS_POSTGRES_URL", "redis": "ADDONS_REDIS_URL"}
NAME = re.compile(r"^[a-z][a-z0-9-]{0,39}$")


class AddonUnavailable(Conflict):
    code = "addon_unavailable"


def _server_url(kind: str) -> str:
    if kind not in KINDS:
        raise ValidationFailed(f"Unknown add-on `{kind}` (known: {', '.join(KINDS)}).",
                               details={"kind": ["Unknown add-on."]})
    url = getattr(settings, KINDS[kind])
    if not url:
        raise AddonUnavailable(f"The {kind} add-on is not offered on this platform: set {KINDS[kind]}.",
                               details={"setting": KINDS[kind]})
    return url


def addons_list(*, project) -> list[Addon]:
    return list(Addon.objects.filter(project=project, deleted_at__isnull=True))


def addon_get(*, project, addon_id: str) -> Addon:
    addon = Addon.objects.filter(project=project, pk=addon_id, deleted_at__isnull=True).first()
    if addon is None:
        raise NotFound("No such add-on.")
    return addon


@transaction.atomic
def addon_create(*, project, kind: str, name: str | None = None, actor=None, ip: str = "") -> Addon:
    """Record the add-on `provisioning` and provision it in a task."""
    _server_url(kind)
    name = (name or kind).lower()
    if not NAME.match(name):
        raise ValidationFailed("The name must be 1 to 40 of a-z, 0-9 and -, starting with a letter.",
                               details={"name": ["Invalid name."]})
    if Addon.objects.filter(project=project, name=name, deleted_at__isnull=True).exists():
        raise Conflict(f"The project already has an add-on named {name}.", code="addon_exists",
                       details={"name": ["Already in use."]})
    addon = Addon.objects.create(project=project, kind=kind, name=name)
    audit_record(workspace=project.workspace, actor=actor, action="addon.created", target=addon,
                 data={"kind": kind, "name": name}, ip=ip)
    enqueue("platform_app.tasks.resources.addon_provision", addon.pk)
    return addon


def addon_provision(*, addon_id: str) -> str:
    """Make the database or the key space; the add-on's final status. Idempotent: only `provisioning` is made."""
    addon = Addon.objects.filter(pk=addon_id, status=Addon.Status.PROVISIONING).first()
    if addon is None:
        return "skipped"
    made = {}
    try:
        made = (_postgres_make if addon.kind == Addon.Kind.POSTGRES else _redis_make)(addon)
    except Exception as exc:  # noqa: BLE001 - any failure of the server: the add-on says why, nothing stays half-made
        logger.warning("Provisioning %s failed: %s", addon.pk, exc)
        try:
            (_postgres_drop if addon.kind == Addon.Kind.POSTGRES else _redis_drop)(addon, _names(addon))
        except Exception:  # noqa: BLE001 - the first error is the one to report
            pass
        Addon.objects.filter(pk=addon.pk).update(status=Addon.Status.ERROR,
                                                 error_message=f"Provisioning failed: {str(exc)[:400]}")
        return Addon.Status.ERROR
    Addon.objects.filter(pk=addon.pk, status=Addon.Status.PROVISIONING).update(
        status=Addon.Status.READY, credentials_encrypted=encrypt(json.dumps(made)))
    return Addon.Status.READY


def _names(addon) -> dict:
    base = settings.ADDONS_NAME_PREFIX + re.sub(r"[^a-z0-9]", "", addon.pk.removeprefix("add_").lower())
    return {"role": base, "database": base, "prefix": base}


# -- PostgreSQL -------------------------------------------------------------------------------------------------
def _pg_admin():
    import psycopg

    return psycopg.connect(settings.ADDONS_POSTGRES_URL, autocommit=True, connect_timeout=5)


def _postgres_make(addon) -> dict:
    from psycopg import sql

    names, password = _names(addon), secrets.token_urlsafe(24)
    role, database = sql.Identifier(names["role"]), sql.Identifier(names["database"])
    with _pg_admin() as admin:
        admin.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {} CONNECTION LIMIT {} NOSUPERUSER NOCREATEDB "
                              "NOCREATEROLE NOREPLICATION").format(
            role, sql.Literal(password), sql.Literal(settings.ADDONS_POSTGRES_CONNECTION_LIMIT)))
        admin.execute(sql.SQL("CREATE DATABASE {} OWNER {}").format(database, role))
        admin.execute(sql.SQL("REVOKE ALL ON DATABASE {} FROM PUBLIC").format(database))
    server = urlsplit(settings.ADDONS_POSTGRES_URL)
    return {"host": server.hostname or "127.0.0.1", "port": server.port or 5432, "user": names["role"],
            "password": password, "database": names["database"]}


def _postgres_drop(addon, names: dict) -> None:
    from psycopg import sql

    with _pg_admin() as admin:
        admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s",
                      [names["database"]])
        admin.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(names["database"])))
        admin.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(names["role"])))


# -- Redis ------------------------------------------------------------------------------------------------------
def _redis_admin():
    """The server's admin connection, on database 0 whatever ADDONS_REDIS_URL names: every add-on works there (its
    REDIS_URL says /0 and the guard refuses SELECT), so that is where its keys are purged."""
    import redis

    url = urlsplit(settings.ADDONS_REDIS_URL)._replace(path="/0")
    return redis.Redis.from_url(urlunsplit(url), socket_timeout=5, socket_connect_timeout=5)


def _redis_make(addon) -> dict:
    names, password = _names(addon), secrets.token_urlsafe(24)
    _redis_rules_apply(_redis_admin(), names, password)
    server = urlsplit(settings.ADDONS_REDIS_URL)
    return {"host": server.hostname or "127.0.0.1", "port": server.port or 6379, "user": names["role"],
            "password": password, "prefix": f"{names['prefix']}:"}


def _redis_rules_apply(client, names: dict, password: str) -> None:
    import redis

    client.execute_command("ACL", "SETUSER", names["role"], *redis_acl_rules(
        password=password, prefix=names["prefix"], known=redis_known_commands(client)))
    for subcommand in SUBCOMMANDS:
        try:
            client.execute_command("ACL", "SETUSER", names["role"], f"+{subcommand}")
        except redis.ResponseError:  # a subcommand this server does not have
            pass


def addons_redis_rules_apply() -> int:
    """Give every ready Redis add-on's user today's ACL (`manage.py addons_redis_rules`); how many."""
    applied, client = 0, None
    for addon in Addon.objects.filter(kind=Addon.Kind.REDIS, status=Addon.Status.READY, deleted_at__isnull=True):
        client = client or _redis_admin()
        _redis_rules_apply(client, _names(addon), json.loads(decrypt(addon.credentials_encrypted))["password"])
        applied += 1
    return applied


def _redis_drop(addon, names: dict) -> None:
    client = _redis_admin()
    client.execute_command("ACL", "DELUSER", names["role"])
    for key in client.scan_iter(match=f"{names['prefix']}:*", count=1000):
        client.delete(key)


# -- deleting ---------------------------------------------------------------------------------------------------
@transaction.atomic
def addon_delete(*, project, addon_id: str, actor=None, ip: str = "") -> Addon:
    """The variables go at once; the data after the grace period (`addons_purge`)."""
    addon = Addon.objects.select_for_update().filter(project=project, pk=addon_id, deleted_at__isnull=True).first()
    if addon is None:
        raise NotFound("No such add-on.")
    addon.status, addon.deleted_at = Addon.Status.DELETED, timezone.now()
    addon.save(update_fields=["status", "deleted_at"])
    audit_record(workspace=project.workspace, actor=actor, action="addon.deleted", target=addon,
                 data={"kind": addon.kind, "name": addon.name}, ip=ip)
    return addon


def addons_purge() -> int:
    """Drop the databases and keys of add-ons deleted longer ago than ADDONS_DELETE_GRACE_HOURS."""
    cutoff = timezone.now() - timedelta(hours=settings.ADDONS_DELETE_GRACE_HOURS)
    purged = 0
    for addon in Addon.objects.filter(deleted_at__lt=cutoff, purged_at__isnull=True):
        try:
            (_postgres_drop if addon.kind == Addon.Kind.POSTGRES else _redis_drop)(addon, _names(addon))
        except Exception as exc:  # noqa: BLE001 - the server is away: the next run tries again
            logger.warning("Purging %s failed: %s", addon.pk, exc)
            continue
        Addon.objects.filter(pk=addon.pk).update(purged_at=timezone.now(), credentials_encrypted="")
        purged += 1
    return purged


# -- what builds and instances get -------------------------------------------------------------------------------
def addon_env_names(addon) -> list[str]:
    return ["DATABASE_URL"] if addon.kind == Addon.Kind.POSTGRES else ["REDIS_URL", "REDIS_KEY_PREFIX"]


def addon_managed(*, project) -> list[Managed]:
    """`DATABASE_URL` for a postgres add-on, `REDIS_URL` and `REDIS_KEY_PREFIX` for a redis one, pointing at the
    sandbox's own loopback, and the endpoint (with its guard) that makes them reachable there."""
    items = []
    for addon in Addon.objects.filter(project=project, status=Addon.Status.READY, deleted_at__isnull=True):
        c, port = json.loads(decrypt(addon.credentials_encrypted)), local_port(addon.pk)
        user, password = quote(c["user"], safe=""), quote(c["password"], safe="")
        source, prefix = f"addon:{addon.pk}", addon.name
        if addon.kind == Addon.Kind.POSTGRES:
            endpoint = Endpoint(c["host"], c["port"], port,
                                {"kind": "postgres", "user": c["user"], "database": c["database"]})
            items.append(Managed("DATABASE_URL", f"postgres://{user}:{password}@127.0.0.1:{port}/{c['database']}",
                                 source, prefix, endpoint))
        else:
            endpoint = Endpoint(c["host"], c["port"], port,
                                {"kind": "redis", "user": c["user"], "password": c["password"],
                                 "maxCommandBytes": settings.SANDBOX_GUARD_MAX_COMMAND_BYTES})
            items.append(Managed("REDIS_URL", f"redis://{user}:{password}@127.0.0.1:{port}/0", source, prefix,
                                 endpoint))
            items.append(Managed("REDIS_KEY_PREFIX", c["prefix"], source, prefix))
    return items
