"""The edge: serves ready deployments by host name, before any other route.

`<project>-<short id>.<DEPLOY_DOMAIN>` is one deployment, `<project>.<DEPLOY_DOMAIN>` the project's production
deployment, `<project>-tunnel.<DEPLOY_DOMAIN>` the project's tunnel (a developer's machine: `tunnel_proxy`,
docs/tunnel.md), resolved first. Static files with their content types, `index.html` for folders, the artifact's
`404.html` (or a plain 404), cache headers; preview deployments pass through preview protection first.

Speed: `_resolve(host)` (the database lookup; the one place a host name becomes a deployment) runs once per
host and a few seconds, not per request: `_site` adds the project's compiled firewall rules and its analytics
switch, and `hostcache.hosts` keeps the answer in the process until `edge_hosts_invalidate()` (promote,
rollback, domains, rule changes). Pages come from the in-process copy of the ISR cache (`isr.pages`).
"""
import mimetypes
import time
from http.cookies import CookieError
from dataclasses import dataclass

from django.conf import settings
from django.http import FileResponse, HttpResponse, HttpResponseRedirect

from platform_app.models import Deployment, Project
from platform_app.services.automation import edge_metrics  # per-project request counters for alerts
from platform_app.services.domains.routing import DomainRedirect, domain_resolve
from platform_app.services.edge import analytics, firewall
from platform_app.services.edge.hostcache import MISSING, hosts
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
    return Site(deployment, firewall.rules_compiled(project_id=deployment.project_id),
                analytics.analytics_enabled(project_id=deployment.project_id))


def site_for(host: str) -> Site:
    """The cached `_site` of a Host header."""
    key = host.lower()
    site = hosts.get(key)
    if site is MISSING:
        generation = hosts.generation
        site = _site(key)
        hosts.set(key, site, generation=generation)
    return site


def _resolve(host: str):
    host = host.split(":")[0].lower()
    suffix = "." + settings.DEPLOY_DOMAIN
    if not host.endswith(suffix):
        return domain_resolve(host)  # a verified custom domain, or None: the platform itself
    label = host[: -len(suffix)]
    if not label or "." in label:
        return None
    tunnel = tunnel_resolve(label)  # before project slugs: `<slug>-tunnel` is never one (a reserved ending)
    if tunnel is not None:
        return tunnel
    project = Project.objects.filter(slug=label).select_related("production_deployment__project").first()
    if project is not None:
        return project.production_deployment or False
    slug, _, short = label.rpartition("-")
    if not slug or not short:
        return False
    return (Deployment.objects.select_related("project").filter(project__slug=slug, pk__startswith=f"dpl_{short}")
            .first() or False)


def serve(request, deployment, *, inject: bool = False) -> HttpResponse:
    from platform_app.services.edge.preview import preview_gate

    if deployment.status != Deployment.Status.READY or not deployment.artifact_path:
        return HttpResponse(f"This deployment is {deployment.status}.", status=503, content_type="text/plain")
    gate = preview_gate(request, deployment)
    if gate is not None:
        return gate
    from platform_app.services.agents.agents import is_runtime

    if is_runtime(deployment):
        return proxy(request, deployment, inject=inject)
    from platform_app.services.edge import isr

    hit = isr.cached(deployment.pk, request.path)
    if hit is not None:
        body = hit["body"]
        if inject and hit["content_type"].startswith("text/html"):
            body = analytics.script_inject(body, project_id=deployment.project_id)
        response = HttpResponse(body, status=hit["status"], content_type=hit["content_type"])
        response["Cache-Control"] = hit["cache_control"]
        response["X-Edge-Cache"] = "HIT"
        response["X-Deployment-Id"] = deployment.pk
        return response
    from platform_app.services.deployments.artifacts import artifact_local

    root = artifact_local(deployment).resolve()
    target = (root / request.path.lstrip("/")).resolve()
    if not target.is_relative_to(root):  # a link never leads out (the archive rules keep them inside anyway)
        return HttpResponse("Not found", status=404, content_type="text/plain")
    if target.is_dir():
        target = target / "index.html"
    if not target.is_file() and not target.suffix and (target.with_suffix(".html")).is_file():
        target = target.with_suffix(".html")  # clean URLs: /about → about.html
    if not target.is_file():
        page = root / "404.html"
        if page.is_file():
            return HttpResponse(page.read_bytes(), status=404, content_type="text/html; charset=utf-8")
        return HttpResponse("Not found", status=404, content_type="text/plain")
    content_type, _ = mimetypes.guess_type(target.name)
    content_type = content_type or "application/octet-stream"
    html = content_type.startswith("text/html")
    cache_control = "public, max-age=0, must-revalidate" if html else "public, max-age=3600"
    if target.stat().st_size <= settings.EDGE_CACHE_MAX_BYTES:
        body = target.read_bytes()
        isr.store(deployment.pk, request.path, status=200, content_type=content_type, body=body,
                  cache_control=cache_control, tags=isr.tags_for(root, request.path))
        if inject and html:
            body = analytics.script_inject(body, project_id=deployment.project_id)
        response = HttpResponse(body, content_type=content_type)
    else:
        response = FileResponse(open(target, "rb"), content_type=content_type)
    response["Cache-Control"] = cache_control
    response["X-Edge-Cache"] = "MISS"
    response["X-Deployment-Id"] = deployment.pk
    return response


class EdgeMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        site = site_for(request.META.get("HTTP_HOST", ""))
        deployment = site.deployment
        if deployment is None:
            return self.get_response(request)  # not a deployment host: the platform itself
        if deployment is False:
            return HttpResponse("No deployment here.", status=404, content_type="text/plain")
        if site.rules or request.path == firewall.CHALLENGE_PATH:
            refused = firewall.firewall_enforce(request, deployment=deployment, rules=site.rules)
            if refused is not None:
                return refused
        if isinstance(deployment, TunnelHost):
            return tunnel_proxy(request, deployment)
        if isinstance(deployment, DomainRedirect):  # the project's primary domain, or the domain's redirectTo
            return HttpResponseRedirect(deployment.location(request), status=308)
        from platform_app.services.agents.agents import is_runtime

        if request.method not in ("GET", "HEAD") and not is_runtime(deployment):
            return HttpResponse("Method not allowed", status=405, content_type="text/plain")
        from django.contrib.auth import get_user
        from django.utils.functional import SimpleLazyObject

        request.user = SimpleLazyObject(lambda: get_user(request))  # members pass preview protection
        started = time.monotonic()
        response = serve(request, deployment, inject=site.analytics)
        edge_metrics.record(deployment.project_id, response.status_code, time.monotonic() - started)
        return response


HOP_HEADERS = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "proxy-authorization",
               "proxy-authenticate", "host", "content-length"}
FORWARDED_HEADERS = {"x-forwarded-host", "x-forwarded-proto", "x-forwarded-for"}  # ours replace the visitor's


def proxy(request, deployment, *, inject: bool = False) -> HttpResponse:
    """Forward the request to a running instance of the deployment on its node (HTML gets the analytics script
    when `inject`)."""
    import httpx

    from platform_app.services.agents.agents import running_instance

    instance = running_instance(deployment)
    if instance is None:
        return HttpResponse("No running instance yet; an agent is starting one.", status=503, content_type="text/plain")
    url = f"http://{instance.node.host}:{instance.port}{request.get_full_path()}"
    headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP_HEADERS}
    headers["X-Forwarded-Host"] = request.META.get("HTTP_HOST", "")
    try:
        upstream = httpx.request(request.method, url, headers=headers, content=request.body, timeout=30.0)
    except httpx.HTTPError:
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
