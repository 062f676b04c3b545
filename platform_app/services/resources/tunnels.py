"""The tunnel: `<project>-tunnel.<DEPLOY_DOMAIN>` served by a port of a developer's machine (docs/tunnel.md).

Start makes a token (shown once, stored as its SHA-256; a new start replaces it and closes the connections of the
old one); `manage.py tunnel` opens a WebSocket with it (`TUNNEL_CONNECT_PATH`, platform_app/api/resources/tunnel.py)
and answers the requests the edge forwards (platform_app/edge.py → `tunnel_request` → tunnel_relay.py). Stop
removes the token: the connections close, the token no longer works, the edge answers 503.

Status: `stopped` without a token, `connected` while a connection of the current token was seen within
TUNNEL_CONNECTION_TTL_SECONDS, `waiting` otherwise. Connections and byte counters are written by the process
holding each WebSocket, every TUNNEL_HEARTBEAT_SECONDS (the counters: bodies of requests forwarded and answers
returned since the last start).
"""
import os
import secrets
import socket
import time
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Count, F, Min
from django.utils import timezone

from config.errors import Unauthenticated
from config.ids import new_id
from platform_app.models import Project, Tunnel, TunnelConnection, TunnelRequest
from platform_app.services.identity.keys import sha256_hex
from platform_app.services.projects.addresses import tunnel_slug, tunnel_url
from platform_app.services.resources.tunnel_relay import NoAnswer  # noqa: F401 - raised through tunnel_request
from platform_app.services.resources.tunnel_relay import (NotConnected, frame_pack, frame_unpack, relay_close,
                                                          relay_request)
from platform_app.services.teams.audit import audit_record

TOKEN_PREFIX = "svct_"
DEFAULT_PORT = 3000


def _holder() -> str:
    """This process, as connection rows name it (read per call: a forked worker has a pid of its own)."""
    return f"{socket.gethostname()}:{os.getpid()}"


@dataclass(frozen=True)
class TunnelHost:
    """What the edge serves at `<slug>-tunnel.<DEPLOY_DOMAIN>`: the project's tunnel."""

    project_id: str  # the edge applies the project's firewall first


@dataclass(frozen=True)
class TunnelState:
    status: str  # stopped | waiting | connected
    url: str
    connected_since: datetime | None
    bytes_in: int
    bytes_out: int
    clients: int
    started_at: datetime | None


@dataclass(frozen=True)
class TunnelAnswer:
    status: int
    headers: list  # [(name, value)], in the client's order, repeated names kept (Set-Cookie)
    body: bytes


def _cutoff() -> datetime:
    return timezone.now() - timedelta(seconds=settings.TUNNEL_CONNECTION_TTL_SECONDS)


# State, start, stop -----------------------------------------------------------------------------------------

def tunnel_state(*, project) -> TunnelState:
    tunnel = Tunnel.objects.filter(project=project).first()
    url = tunnel_url(project)
    if tunnel is None:
        return TunnelState("stopped", url, None, 0, 0, 0, None)
    if not tunnel.token_hash:
        return TunnelState("stopped", url, None, tunnel.bytes_in, tunnel.bytes_out, 0, tunnel.started_at)
    live = (TunnelConnection.objects.filter(tunnel=tunnel, token_hash=tunnel.token_hash, last_seen_at__gte=_cutoff())
            .aggregate(clients=Count("pk"), since=Min("opened_at")))
    return TunnelState("connected" if live["clients"] else "waiting", url, live["since"], tunnel.bytes_in,
                       tunnel.bytes_out, live["clients"], tunnel.started_at)


def tunnel_command(*, project, token: str, port: int = DEFAULT_PORT) -> str:
    """The command that serves the tunnel from a developer's machine."""
    return (f"python manage.py tunnel --server {settings.SITE_URL.rstrip('/')} --project {project.pk} "
            f"--port {port} --token {token}")


def _end_connections(tunnel: Tunnel) -> None:
    """Forget the tunnel's connections (and their relay rows); their holders close them."""
    ids = list(tunnel.connections.values_list("pk", flat=True))
    if ids:
        TunnelConnection.objects.filter(pk__in=ids).delete()
        transaction.on_commit(lambda: relay_close(ids))


@transaction.atomic
def tunnel_start(*, project, actor=None, ip: str = "") -> tuple[TunnelState, str]:
    """A new token (returned once) and the state, `waiting` until a client connects with it. Starting again
    replaces the token: clients of the old one are disconnected and refused. The byte counters start at zero."""
    Project.objects.select_for_update().filter(pk=project.pk).first()  # one start or stop of a project at a time
    tunnel = Tunnel.objects.filter(project=project).first() or Tunnel(project=project)
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    if not tunnel._state.adding:
        _end_connections(tunnel)
    tunnel.token_hash = sha256_hex(token)
    tunnel.started_at, tunnel.stopped_at = timezone.now(), None
    tunnel.bytes_in = tunnel.bytes_out = 0
    tunnel.save()
    audit_record(workspace=project.workspace, actor=actor, action="tunnel.started", target=tunnel,
                 data={"project": project.pk}, ip=ip)
    return tunnel_state(project=project), token


@transaction.atomic
def tunnel_stop(*, project, actor=None, ip: str = "") -> TunnelState:
    """Stopped: the token no longer works, open connections are closed, the edge answers 503. Stopping a
    stopped tunnel changes nothing."""
    Project.objects.select_for_update().filter(pk=project.pk).first()
    tunnel = Tunnel.objects.filter(project=project).first()
    if tunnel is not None and tunnel.token_hash:
        _end_connections(tunnel)
        tunnel.token_hash, tunnel.stopped_at = "", timezone.now()
        tunnel.save(update_fields=["token_hash", "stopped_at"])
        audit_record(workspace=project.workspace, actor=actor, action="tunnel.stopped", target=tunnel,
                     data={"project": project.pk}, ip=ip)
    return tunnel_state(project=project)


# The WebSocket's side (the holder, through tunnel_relay.run_db) ---------------------------------------------

def _token_tunnel(token: str, project_ref: str, *, lock: bool = False) -> Tunnel:
    token = (token or "").strip()
    if not token.startswith(TOKEN_PREFIX) or len(token) > 200:
        raise Unauthenticated("A tunnel token is required (`Authorization: Bearer svct_...`).", code="invalid_token")
    tunnels = Tunnel.objects.select_for_update(of=("self",)) if lock else Tunnel.objects
    tunnel = tunnels.select_related("project").filter(token_hash=sha256_hex(token)).first()
    if tunnel is None:
        raise Unauthenticated("This tunnel token is not valid: the tunnel was stopped or started again.",
                              code="invalid_token")
    if project_ref and project_ref not in (tunnel.project.pk, tunnel.project.slug):
        raise Unauthenticated("This tunnel token belongs to another project.", code="invalid_token")
    return tunnel


def tunnel_authenticate(*, token: str, project_ref: str = "") -> Tunnel:
    """The tunnel whose token this is (`tunnel.project` loaded). Unauthenticated (401) for an unknown, replaced or
    stopped token, or a `project_ref` (id or slug) that is not the token's project."""
    return _token_tunnel(token, project_ref)


@transaction.atomic
def tunnel_connection_open(*, token: str, project_ref: str = "", client_ip: str | None = None,
                           connection_id: str | None = None) -> TunnelConnection:
    """A connection of the token's tunnel held by this process (`connection.tunnel.project` loaded); the token is
    checked again under the tunnel's lock, so a stop that commits first wins."""
    tunnel = _token_tunnel(token, project_ref, lock=True)
    connection = TunnelConnection.objects.create(id=connection_id or new_id("tcn"), tunnel=tunnel, holder=_holder(),
                                                 token_hash=tunnel.token_hash, client_ip=client_ip)
    connection.tunnel = tunnel
    return connection


def tunnel_connection_beat(*, connection: TunnelConnection, bytes_in: int = 0, bytes_out: int = 0) -> bool:
    """The holder's heartbeat: the connection was seen now, and the bytes it counted since the last beat are added
    to the tunnel. False: the tunnel was stopped or started again since it connected (close it)."""
    with transaction.atomic():
        if not TunnelConnection.objects.filter(pk=connection.pk).update(last_seen_at=timezone.now()):
            if not Tunnel.objects.filter(pk=connection.tunnel_id, token_hash=connection.token_hash).exists():
                return False
            try:  # pruned while its process could not write (a database outage), yet still current: back
                with transaction.atomic():
                    TunnelConnection.objects.create(id=connection.pk, tunnel_id=connection.tunnel_id,
                                                    token_hash=connection.token_hash, holder=connection.holder,
                                                    client_ip=connection.client_ip, opened_at=connection.opened_at)
            except IntegrityError:
                return False
        if bytes_in or bytes_out:
            Tunnel.objects.filter(pk=connection.tunnel_id, token_hash=connection.token_hash).update(
                bytes_in=F("bytes_in") + bytes_in, bytes_out=F("bytes_out") + bytes_out)
    return True


def tunnel_connection_close(*, connection: TunnelConnection, bytes_in: int = 0, bytes_out: int = 0) -> None:
    """The WebSocket ended: the last counts, and the connection is gone."""
    with transaction.atomic():
        if bytes_in or bytes_out:
            Tunnel.objects.filter(pk=connection.tunnel_id, token_hash=connection.token_hash).update(
                bytes_in=F("bytes_in") + bytes_in, bytes_out=F("bytes_out") + bytes_out)
        TunnelConnection.objects.filter(pk=connection.pk).delete()


# The edge's side --------------------------------------------------------------------------------------------

def tunnel_resolve(label: str):
    """For a label under DEPLOY_DOMAIN: None when it is no tunnel label, a `TunnelHost`, or False (a tunnel label
    of no project: the edge's 404)."""
    slug = tunnel_slug(label)
    if slug is None:
        return None
    project_id = Project.objects.filter(slug=slug).values_list("pk", flat=True).first()
    return TunnelHost(project_id) if project_id else False


def tunnel_request(*, project_id: str, method: str, path: str, headers: list, body: bytes) -> TunnelAnswer:
    """Forward one request to a client of the project's tunnel and return its answer: NotConnected when no client
    is connected (or none took the request), NoAnswer when the one that took it did not answer in time."""
    connection_id = (TunnelConnection.objects
                     .filter(tunnel__project_id=project_id, tunnel__token_hash=F("token_hash"),
                             last_seen_at__gte=_cutoff())
                     .order_by("-opened_at").values_list("pk", flat=True).first())
    if connection_id is None:
        raise NotConnected("no client is connected")
    request_id = new_id("trq")
    timeout = settings.TUNNEL_ANSWER_TIMEOUT_SECONDS
    frame = frame_pack({"type": "request", "id": request_id, "method": method, "path": path, "headers": headers,
                        "deadline": time.time() + timeout}, body)
    head, answer = frame_unpack(relay_request(connection_id=connection_id, request_id=request_id, frame=frame,
                                              timeout=timeout))
    return TunnelAnswer(status=head["status"], headers=[tuple(pair) for pair in head["headers"]], body=answer)


# Housekeeping -----------------------------------------------------------------------------------------------

def tunnels_prune() -> dict:
    """Connections not seen for a while (their process died) and relay rows an edge process left behind."""
    stale = timezone.now() - timedelta(seconds=max(settings.TUNNEL_CONNECTION_TTL_SECONDS * 6, 60))
    old = timezone.now() - timedelta(seconds=settings.TUNNEL_ANSWER_TIMEOUT_SECONDS + 60)
    _, requests = TunnelRequest.objects.filter(created_at__lt=old).delete()
    _, connections = TunnelConnection.objects.filter(last_seen_at__lt=stale).delete()
    return {"connections": connections.get(TunnelConnection._meta.label, 0),
            "requests": requests.get(TunnelRequest._meta.label, 0) + connections.get(TunnelRequest._meta.label, 0)}
