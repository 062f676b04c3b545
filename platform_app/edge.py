"""The edge: serves ready deployments by host name, before any other route.

`<project>-<short id>.<DEPLOY_DOMAIN>` is one deployment (resolved first, full 8-character short id only),
`<project>-tunnel.<DEPLOY_DOMAIN>` the project's tunnel (a developer's machine: `tunnel_proxy`, docs/tunnel.md),
`<component>--<project>.<DEPLOY_DOMAIN>` a component, `<project>.<DEPLOY_DOMAIN>` the project's production
deployment. The request path is normalised once (`services/edge/paths.py`) and that path is what the firewall,
preview protection, the cache, the file lookup and a running instance see. Static files with their content types,
`index.html` for folders, the artifact's `404.html` (or a plain 404), cache headers; preview deployments pass
through preview protection first.

Speed: `_resolve(host)` (the database lookup; the one place a host name becomes a deployment) runs once per
host and a few seconds, not per request: `_site` adds the project's compiled firewall rules and its analytics
switch, and `hostcache.hosts` keeps the answer in the process until `edge_hosts_invalidate()` (promote,
rollback, domains, rule changes). Pages come from the in-process copy of the ISR cache (`isr.pages`).
"""
import mimetypes
import re
import sys
import time
from http.cookies import CookieError
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.db.models import Exists, OuterRef
from django.http import FileResponse, HttpResponse, HttpResponseRedirect
from django.utils.encoding import escape_uri_path, iri_to_uri

from config.client_ip import client_ip
from config.kept_answers import keep
from platform_app.models import AnalyticsSettings, Component, Deployment, FirewallRule, Project
from platform_app.services.agents.agents import is_runtime
from platform_app.services.deployments.artifacts import artifact_local
from platform_app.services.automation import edge_metrics  # per-project counters for alerts and metering
from platform_app.services.domains.routing import DomainRedirect, domain_resolve
from platform_app.services.edge import analytics, firewall, preview
from platform_app.services.edge.hostcache import MISSING, host_tag, hosts
from platform_app.services.edge.paths import Target, path_normalize, served_names, static_lookup
from platform_app.services.projects.addresses import deployment_at
from platform_app.services.resources.tunnels import NoAnswer, NotConnected, TunnelHost, tunnel_request, tunnel_resolve


@dataclass(frozen=True)
class Site:
    deployment: object  # a Deployment; None: not a deployment host; False: ours, but nothing is served there
    rules: tuple = ()  # the project's enabled firewall rules, compiled, by priority
    analytics: bool = False  # inject the analytics script into HTML


def _site(host: str) -> Site:
    deployment = _resolve(host)
    if not deployment:
        return Site(deployment)
    if isinstance(deployment, TunnelHost):  # the project's firewall applies; no analytics script
        return Site(deployment, firewall.rules_compiled(project_id=deployment.project_id))
    # a project found by its slug says, from the same query, whether it has rules and analytics (`_switched`)
    project = getattr(deployment, "project", None)  # (a DomainRedirect has only its project_id)
    rules_on, analytics_on = getattr(project, "rules_on", True), getattr(project, "analytics_on", None)
    return Site(deployment, firewall.rules_compiled(project_id=deployment.project_id) if rules_on else (),
                analytics.analytics_enabled(project_id=deployment.project_id) if analytics_on is None else analytics_on)


def _switched(projects):
    """Projects with what the edge asks of each beside its deployment, as subqueries of the one query that finds
    it: whether a web component serves it, and whether it has enabled firewall rules and analytics."""
    of_it = {"project": OuterRef("pk")}
    return projects.annotate(
        web_on=Exists(Component.objects.filter(**of_it, kind=Component.Kind.WEB, deployment__isnull=False)),
        rules_on=Exists(FirewallRule.objects.filter(**of_it, enabled=True)),
        analytics_on=Exists(AnalyticsSettings.objects.filter(**of_it, enabled=True)))


def site_for(host: str) -> Site:
    """The cached `_site` of a Host header."""
    key = host.lower()
    site = hosts.get(key)
    if site is MISSING:
        stamp = hosts.stamp
        site = _site(key)
        hosts.set(key, site, generation=stamp, tag=host_tag(site))
    return site


# `name[:port]` with a numeric port: anything else after the name (`shop.test:@evil.example`) is no host of ours
HOST = re.compile(r"^(?P<name>[^:@/\\\[\]\s]*)(?::[0-9]{1,5})?$")


def _resolve(host: str):
    match = HOST.match(host)
    if match is None:
        return None  # a malformed Host: the platform's host validation refuses it (400)
    host = match["name"].lower()
    suffix = "." + settings.DEPLOY_DOMAIN
    if not host.endswith(suffix):
        return domain_resolve(host)  # a verified custom domain, or None: the platform itself
    label = host[: -len(suffix)]
    if not label or "." in label:
        return None
    deployment = deployment_at(label)  # first: no project slug may shadow a deployment's address
    if deployment is not None:
        return deployment
    tunnel = tunnel_resolve(label)  # before project slugs: `<slug>-tunnel` is never one (a reserved ending)
    if tunnel is not None:
        return tunnel
    if "--" in label:  # `<component>--<project>`: a component of the project (slugs never hold "--")
        name, _, slug = label.partition("--")
        component = (Component.objects.filter(project__slug=slug, name=name, deployment__isnull=False)
                     .select_related("deployment__project").first())
        return _serving(component) if component is not None else False
    project = _switched(Project.objects.filter(slug=label)).select_related("production_deployment").first()
    if project is None:
        return False
    web = project.web_on and (Component.objects.filter(project=project, kind=Component.Kind.WEB,
                                                       deployment__isnull=False)
                              .select_related("deployment__project").order_by("created_at").first())
    if web:
        return _serving(web)
    deployment = project.production_deployment
    if deployment is None:
        return False
    deployment.project = project  # with its switches
    return deployment


def _serving(component):
    """A component's deployment, marked so that the edge proxies to any healthy instance of the component: during
    a rollout the old deployment's instances answer until the new ones are healthy."""
    deployment = component.deployment
    deployment.serving_component_id = component.pk
    return deployment


def _static(deployment, path: str) -> tuple[Path | None, Target | None]:
    """For a ready static deployment: its artifact folder (resolved) and the file served for `path` (None: the
    404 page); (None, None) for anything else (a runtime deployment, one not ready, a redirect)."""
    if (not isinstance(deployment, Deployment) or deployment.status != Deployment.Status.READY
            or not deployment.artifact_path or is_runtime(deployment)):
        return None, None

    def root_of():
        local = artifact_local(deployment)
        return local.resolve() if local is not None else None

    return static_lookup((deployment.pk, deployment.artifact_path), path, root_of)


def _not_found(root: Path) -> HttpResponse:
    page = root / "404.html"
    if page.is_file():
        return HttpResponse(page.read_bytes(), status=404, content_type="text/html; charset=utf-8")
    return HttpResponse("Not found", status=404, content_type="text/plain")


def serve(request, deployment, *, path: str, root: Path | None, target: Target | None,
          inject: bool = False) -> HttpResponse:
    """Answer for `deployment`: `path` is the normalised request path; for a static deployment `root` is its
    artifact folder and `target` the file served for `path` (None: the 404 page)."""
    if deployment.status != Deployment.Status.READY or not deployment.artifact_path:
        return HttpResponse(f"This deployment is {deployment.status}.", status=503, content_type="text/plain")
    gate = preview.preview_gate(request, deployment)
    if gate is not None:
        return gate
    if root is None:
        return proxy(request, deployment, path=path, inject=inject)
    if target is None:
        return _not_found(root)
    from platform_app.services.edge import isr

    hit = isr.cached(deployment.pk, target.key)
    if hit is not None:
        body = hit["body"]
        if inject and hit["content_type"].startswith("text/html"):
            body = analytics.script_inject(body, project_id=deployment.project_id)
        response = HttpResponse(body, status=hit["status"], content_type=hit["content_type"])
        response["Cache-Control"] = hit["cache_control"]
        response["X-Edge-Cache"] = "HIT"
        response["X-Deployment-Id"] = deployment.pk
        return response
    content_type, _ = mimetypes.guess_type(target.file.name)
    content_type = content_type or "application/octet-stream"
    html = content_type.startswith("text/html")
    cache_control = "public, max-age=0, must-revalidate" if html else "public, max-age=3600"
    try:
        small = target.file.stat().st_size <= settings.EDGE_CACHE_MAX_BYTES
        body = target.file.read_bytes() if small else open(target.file, "rb")
    except OSError:  # gone since it was resolved
        return _not_found(root)
    if not small:
        response = FileResponse(body, content_type=content_type)
    else:
        isr.store(deployment.pk, target.key, status=200, content_type=content_type, body=body,
                  cache_control=cache_control, tags=isr.tags_for(root, target.key))
        if inject and html:
            body = analytics.script_inject(body, project_id=deployment.project_id)
        response = HttpResponse(body, content_type=content_type)
    response["Cache-Control"] = cache_control
    response["X-Edge-Cache"] = "MISS"
    response["X-Deployment-Id"] = deployment.pk
    return response


FQDN_DOT = re.compile(r"\.+(?=(?::[0-9]{1,5})?$)")  # the root's dot(s) after the name, before any port


def host_normalize(request) -> str:
    """The Host header without the DNS root's trailing dot (`site.localhost.:8000` → `site.localhost:8000`),
    written back so the edge's routing and Django's host check (and everything after) read the same name."""
    host = FQDN_DOT.sub("", request.META.get("HTTP_HOST", ""), count=1)  # all of them: Django drops one itself
    if "HTTP_HOST" in request.META:
        request.META["HTTP_HOST"] = host
    return host


class EdgeMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        site = site_for(host_normalize(request))
        deployment = site.deployment
        if deployment is None:  # not a deployment host: the platform itself
            response = self.get_response(request)
            if getattr(response, "kept_while", None):
                keep(response, hosts)  # a kept answer holds while this host is still the platform's
            return response
        if deployment is False:
            return HttpResponse("No deployment here.", status=404, content_type="text/plain")
        # one path for everything below: rules, preview routes, cache, file lookup, the instance (paths.py)
        path = path_normalize(request.path)
        root, target = _static(deployment, path)
        if site.rules or path == firewall.CHALLENGE_PATH:
            names = (path, *served_names(target.key)) if target is not None else (path,)
            refused = firewall.firewall_enforce(request, deployment=deployment, rules=site.rules, paths=names)
            if refused is not None:
                return refused
        if isinstance(deployment, TunnelHost):
            return tunnel_proxy(request, deployment)
        if isinstance(deployment, DomainRedirect):  # the project's primary domain, or the domain's redirectTo
            return HttpResponseRedirect(deployment.location(request), status=308)
        from django.contrib.auth import get_user
        from django.utils.functional import SimpleLazyObject

        request.user = SimpleLazyObject(lambda: get_user(request))  # members pass preview protection
        if path == preview.PREVIEW_PATH and deployment.env != "production":
            return preview.preview_answer(request, deployment, ip=client_ip(request))
        if request.method not in ("GET", "HEAD") and not is_runtime(deployment):
            return HttpResponse("Method not allowed", status=405, content_type="text/plain")
        started = time.monotonic()
        response = serve(request, deployment, path=path, root=root, target=target, inject=site.analytics)
        edge_metrics.record(deployment.project_id, response.status_code, time.monotonic() - started,
                            size=_size(response),  # previews are counted on their own (billing: never visited)
                            deployment_id=deployment.pk if deployment.env != "production" else None)
        return response


def _size(response) -> int:
    """Bytes of the answer's body: its Content-Length (files), else its content (a stream without one: 0)."""
    length = response.get("Content-Length")
    if length and length.isdigit():
        return int(length)
    return 0 if response.streaming else len(response.content)


HOP_HEADERS = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "proxy-authorization",
               "proxy-authenticate", "host", "content-length"}
FORWARDED_HEADERS = {"x-forwarded-host", "x-forwarded-proto", "x-forwarded-for"}  # ours replace the visitor's


def proxy(request, deployment, *, path: str, inject: bool = False) -> HttpResponse:
    """Forward the request to a running instance of the deployment on its node, at the normalised `path` the
    firewall saw (HTML gets the analytics script when `inject`)."""
    from platform_app.services.agents.agents import running_instance

    instance = running_instance(deployment, component_id=getattr(deployment, "serving_component_id", None))
    if instance is None:
        return HttpResponse("No running instance yet; an agent is starting one.", status=503, content_type="text/plain")
    query = request.META.get("QUERY_STRING", "")
    target = f"{escape_uri_path(path)}{'?' + iri_to_uri(query) if query else ''}"
    headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP_HEADERS}
    headers["X-Forwarded-Host"] = request.META.get("HTTP_HOST", "")
    upstream = instance_request(instance, request.method, target, headers=headers, body=request.body)
    if upstream is None:
        return HttpResponse("The instance did not answer.", status=502, content_type="text/plain")
    body = upstream.content
    if inject and upstream.headers.get("content-type", "").startswith("text/html"):
        body = analytics.script_inject(body, project_id=deployment.project_id)
    response = HttpResponse(body, status=upstream.status_code)
    for key, value in upstream.headers.items():
        if key.lower() not in HOP_HEADERS and key.lower() != "content-encoding":
            response[key] = value
    response["X-Deployment-Id"] = deployment.pk
    return response


def instance_request(instance, method: str, target: str, *, headers: dict, body: bytes):
    """One request to an instance on its node (`target`: path and query); its answer (status_code, headers,
    content), or None when it did not answer. A workspace node's address is the tenant's word, so the edge
    reaches it only through the outbound guard (checked at every request, no redirect followed); a node joined
    with an operator's invite (every platform node, `manage.py agent --local`) is the operator's, and may be
    loopback (docs/isolation.md)."""
    import httpx

    from config.outbound import OutboundRefused, host_url, outbound_request

    url = host_url(instance.node.host, instance.port, target)
    if instance.node.by_operator:
        try:
            return httpx.request(method, url, headers=headers, content=body, timeout=30.0)
        except httpx.HTTPError:
            return None
    try:
        return outbound_request(method, url, purpose="edge", headers=headers, content=body, timeout=30.0,
                                follow_redirects=False, allow_http=True,
                                max_bytes=sys.maxsize)  # no cap of its own: the same answers as a platform node's
    except OutboundRefused:
        return None


def tunnel_proxy(request, host: TunnelHost) -> HttpResponse:
    """Forward the request over the project's tunnel and answer what the developer's machine answered: 503 when no
    client is connected, 502 when the one that took the request did not answer within
    TUNNEL_ANSWER_TIMEOUT_SECONDS, 413 for a body over TUNNEL_MAX_BODY_BYTES (docs/tunnel.md)."""
    from config.client_ip import client_ip

    limit = settings.TUNNEL_MAX_BODY_BYTES
    declared = request.META.get("CONTENT_LENGTH") or ""
    if declared and (not declared.isdigit() or len(declared) > 18 or int(declared) > limit):
        return HttpResponse(f"The request body is larger than the tunnel's limit ({limit} bytes).", status=413,
                            content_type="text/plain")
    body = request.read(limit + 1)
    if len(body) > limit:
        return HttpResponse(f"The request body is larger than the tunnel's limit ({limit} bytes).", status=413,
                            content_type="text/plain")
    headers = [[k, v] for k, v in request.headers.items()
               if k.lower() not in HOP_HEADERS and k.lower() not in FORWARDED_HEADERS]
    headers += [["X-Forwarded-Host", request.META.get("HTTP_HOST", "")], ["X-Forwarded-Proto", request.scheme],
                ["X-Forwarded-For", client_ip(request)]]
    try:
        answer = tunnel_request(project_id=host.project_id, method=request.method, path=request.get_full_path(),
                                headers=headers, body=body)
    except NotConnected:
        return HttpResponse("Tunnel not connected.", status=503, content_type="text/plain",
                            headers={"Cache-Control": "no-store", "Retry-After": "5"})
    except NoAnswer:
        return HttpResponse("The tunnel client did not answer in time.", status=502, content_type="text/plain",
                            headers={"Cache-Control": "no-store"})
    response = HttpResponse(answer.body, status=answer.status)
    del response["Content-Type"]  # only the client's
    for key, value in answer.headers:
        name = key.lower()
        if name == "set-cookie":
            try:
                response.cookies.load(value)
            except CookieError:
                continue  # one Python cannot read is left out
        elif name not in HOP_HEADERS and name not in ("date", "server"):  # the platform's server sends its own
            response[key] = f"{response[key]}, {value}" if key in response else value
    return response
