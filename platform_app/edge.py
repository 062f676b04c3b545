"""The edge: serves ready deployments by host name, before any other route.

`<project>-<short id>.<DEPLOY_DOMAIN>` is one deployment, `<project>.<DEPLOY_DOMAIN>` the project's production
deployment. Static files with their content types, `index.html` for folders, the artifact's `404.html` (or a
plain 404), cache headers; preview deployments pass through preview protection first.
"""
import mimetypes

from django.conf import settings
from django.http import FileResponse, HttpResponse

from platform_app.models import Deployment, Project


def _resolve(host: str):
    host = host.split(":")[0].lower()
    suffix = "." + settings.DEPLOY_DOMAIN
    if not host.endswith(suffix):
        return None
    label = host[: -len(suffix)]
    if not label or "." in label:
        return None
    project = Project.objects.filter(slug=label).select_related("production_deployment__project").first()
    if project is not None:
        return project.production_deployment or False
    slug, _, short = label.rpartition("-")
    if not slug or not short:
        return False
    return (Deployment.objects.select_related("project").filter(project__slug=slug, pk__startswith=f"dpl_{short}")
            .first() or False)


def serve(request, deployment) -> HttpResponse:
    from platform_app.services.edge.preview import preview_gate

    if deployment.status != Deployment.Status.READY or not deployment.artifact_path:
        return HttpResponse(f"This deployment is {deployment.status}.", status=503, content_type="text/plain")
    gate = preview_gate(request, deployment)
    if gate is not None:
        return gate
    from platform_app.services.agents.agents import is_runtime

    if is_runtime(deployment):
        return proxy(request, deployment)
    from platform_app.services.edge import isr

    hit = isr.cached(deployment.pk, request.path)
    if hit is not None:
        response = HttpResponse(hit["body"], status=hit["status"], content_type=hit["content_type"])
        response["Cache-Control"] = hit["cache_control"]
        response["X-Edge-Cache"] = "HIT"
        response["X-Deployment-Id"] = deployment.pk
        return response
    root = (settings.ARTIFACT_ROOT / deployment.artifact_path).resolve()
    target = (root / request.path.lstrip("/")).resolve()
    if not str(target).startswith(str(root)):
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
        deployment = _resolve(request.META.get("HTTP_HOST", ""))
        if deployment is None:
            return self.get_response(request)  # not a deployment host: the platform itself
        if deployment is False:
            return HttpResponse("No deployment here.", status=404, content_type="text/plain")
        from platform_app.services.agents.agents import is_runtime

        if request.method not in ("GET", "HEAD") and not is_runtime(deployment):
            return HttpResponse("Method not allowed", status=405, content_type="text/plain")
        from django.contrib.auth import get_user
        from django.utils.functional import SimpleLazyObject

        request.user = SimpleLazyObject(lambda: get_user(request))  # members pass preview protection
        return serve(request, deployment)


HOP_HEADERS = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "proxy-authorization",
               "proxy-authenticate", "host", "content-length"}


def proxy(request, deployment) -> HttpResponse:
    """Forward the request to a running instance of the deployment on its node."""
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
    response = HttpResponse(upstream.content, status=upstream.status_code)
    for key, value in upstream.headers.items():
        if key.lower() not in HOP_HEADERS and key.lower() != "content-encoding":
            response[key] = value
    response["X-Deployment-Id"] = deployment.pk
    return response
