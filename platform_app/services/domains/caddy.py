"""TLS in front of the platform through Caddy (docs/deployment.md, "Caddy for custom domains").

`caddy_config()` is the whole JSON configuration the platform wants Caddy to run: an HTTPS server on
CADDY_HTTPS_PORT for any host name (CADDY_HTTP_PORT answers 308 to it), certificates obtained on demand (ACME, or
Caddy's internal CA) for the names the platform's `ask` endpoint allows (verified custom domains, the platform's
own names), every request proxied to the platform at CADDY_UPSTREAM with its Host kept, so the edge serves it.
With CADDY_FILE_SERVER, the custom domains whose answer is a plain static file (`static_sites`) are served by
Caddy straight from the artifact folder, with the edge's rules (index.html, clean URLs, 404.html, cache headers).

`caddy_sync()` loads it through the admin API (POST /load), which Caddy applies without dropping connections;
the admin listener stays where it was. Saves that change what a host serves (domains, projects, firewall rules,
analytics switches) push it again once their transaction commits, and the beat does every
CADDY_SYNC_INTERVAL_SECONDS (a restarted Caddy gets it back)."""
import logging
from pathlib import Path
from urllib.parse import urlsplit

from django.conf import settings
from django.db.models.signals import post_delete, post_save

from config.jobs import enqueue
from platform_app.models import AnalyticsSettings, Deployment, Domain, FirewallRule
from platform_app.services.agents.agents import is_runtime

logger = logging.getLogger(__name__)

CADDY_SYNC_TASK = "platform_app.tasks.domains.caddy_sync"
HTML_CACHE, ASSET_CACHE = "public, max-age=0, must-revalidate", "public, max-age=3600"  # as the edge's


def _admin_listen() -> str:
    parts = urlsplit(settings.CADDY_ADMIN_URL)
    return parts.netloc or "localhost:2019"


def _https_location() -> str:
    port = "" if settings.CADDY_HTTPS_PORT == 443 else f":{settings.CADDY_HTTPS_PORT}"
    return f"https://{{http.request.host}}{port}{{http.request.uri}}"


def static_sites() -> list[tuple[str, Deployment]]:
    """(name, deployment) of the verified custom domains Caddy may answer from disk: the domain serves its
    project's production deployment (no redirectTo, no branch, not redirected to a primary), which is ready and
    static (no running process), and the edge has nothing to add (no enabled firewall rule, analytics off).
    Everything else goes through the edge. A handful of queries whatever the number of domains."""
    domains = list(Domain.objects.filter(status=Domain.Status.VERIFIED, redirect_to="", git_branch="")
                   .select_related("project__production_deployment").order_by("name"))
    projects = {d.project_id for d in domains}
    with_primary = set(Domain.objects.filter(project_id__in=projects, primary=True, status=Domain.Status.VERIFIED)
                       .values_list("project_id", flat=True))
    edge_only = set(FirewallRule.objects.filter(project_id__in=projects, enabled=True)
                    .values_list("project_id", flat=True))
    edge_only |= set(AnalyticsSettings.objects.filter(project_id__in=projects, enabled=True)
                     .values_list("project_id", flat=True))
    sites = []
    for domain in domains:
        deployment = domain.project.production_deployment
        if (deployment is None or deployment.status != Deployment.Status.READY or not deployment.artifact_path
                or is_runtime(deployment) or domain.project_id in edge_only
                or (domain.project_id in with_primary and not domain.primary)):
            continue
        sites.append((domain.name, deployment))
    return sites


def _file_routes(sites) -> tuple[list, list]:
    """Caddy routes serving each site's artifact folder, and the error routes giving its 404 page."""
    root_of = {name: str(Path(settings.CADDY_ARTIFACT_ROOT) / deployment.artifact_path) for name, deployment in sites}
    routes, errors = [], []
    for name, deployment in sites:
        root = {"handler": "vars", "root": root_of[name]}
        routes.append({"match": [{"host": [name]}], "terminal": True, "handle": [{"handler": "subroute", "routes": [
            {"handle": [root, {"handler": "headers", "response": {"set": {
                "X-Deployment-Id": [deployment.pk], "Cache-Control": [ASSET_CACHE]}}}]},
            # the file, the folder's index.html, or the clean URL's .html
            {"match": [{"file": {"try_files": ["{http.request.uri.path}", "{http.request.uri.path}/index.html",
                                               "{http.request.uri.path}.html"]}}],
             "handle": [{"handler": "rewrite", "uri": "{http.matchers.file.relative}"}]},
            {"match": [{"path": ["*.html"]}],
             "handle": [{"handler": "headers", "response": {"set": {"Cache-Control": [HTML_CACHE]}}}]},
            {"handle": [{"handler": "file_server", "canonical_uris": False}]},
        ]}]})
        errors.append({"match": [{"host": [name]}], "terminal": True, "handle": [{"handler": "subroute", "routes": [
            {"handle": [root]},
            {"match": [{"file": {"try_files": ["/404.html"]}}],
             "handle": [{"handler": "rewrite", "uri": "/404.html"},
                        {"handler": "headers", "response": {"set": {"Cache-Control": [HTML_CACHE]}}},
                        {"handler": "file_server", "status_code": "{http.error.status_code}"}]},
            {"handle": [{"handler": "static_response", "status_code": "{http.error.status_code}",
                         "headers": {"Content-Type": ["text/plain"]}, "body": "Not found"}]},
        ]}]})
    return routes, errors


def caddy_config() -> dict:
    issuer = {"module": "internal"} if settings.CADDY_TLS_ISSUER == "internal" else {"module": "acme"}
    if issuer["module"] == "acme" and settings.CADDY_ACME_EMAIL:
        issuer["email"] = settings.CADDY_ACME_EMAIL
    files, errors = _file_routes(static_sites()) if settings.CADDY_FILE_SERVER else ([], [])
    server = {
        "listen": [f"{settings.CADDY_LISTEN_HOST}:{settings.CADDY_HTTPS_PORT}"],
        "routes": [*files, {"handle": [{
            "handler": "reverse_proxy",
            "upstreams": [{"dial": settings.CADDY_UPSTREAM}],
            "flush_interval": -1,  # server-sent event streams pass at once
        }]}],
        # TLS on this listener for any SNI; certificates come from the on-demand policy below
        "tls_connection_policies": [{}],
        "automatic_https": {"disable_redirects": True},
    }
    if errors:
        server["errors"] = {"routes": errors}
    config = {
        "admin": {"listen": _admin_listen()},
        "apps": {
            "http": {
                "http_port": settings.CADDY_HTTP_PORT,
                "https_port": settings.CADDY_HTTPS_PORT,
                "servers": {
                    "platform": server,
                    # plain http: ACME's HTTP challenge (Caddy answers it here), everything else 308 to https
                    "redirect": {
                        "listen": [f"{settings.CADDY_LISTEN_HOST}:{settings.CADDY_HTTP_PORT}"],
                        "routes": [{"handle": [{
                            "handler": "static_response", "status_code": 308,
                            "headers": {"Location": [_https_location()]},
                        }]}],
                    },
                },
            },
            "tls": {
                "automation": {
                    "policies": [{"issuers": [issuer], "on_demand": True}],
                    "on_demand": {"ask": settings.CADDY_ASK_URL},
                },
            },
        },
    }
    if issuer["module"] == "internal":
        # Caddy's own CA: never touch the machine's trust store
        config["apps"]["pki"] = {"certificate_authorities": {"local": {"install_trust": False}}}
    return config


def caddy_sync() -> bool:
    import httpx

    """Load `caddy_config()` into Caddy; False (logged) when Caddy is not configured or refused it."""
    if not settings.CADDY_ADMIN_URL:
        return False
    try:
        response = httpx.post(f"{settings.CADDY_ADMIN_URL}/load", json=caddy_config(),
                              timeout=settings.CADDY_TIMEOUT_SECONDS,
                              # Caddy's admin API checks Origin/Host against its listener
                              headers={"Host": _admin_listen()})
    except httpx.HTTPError as exc:
        logger.warning("Caddy at %s did not answer: %s", settings.CADDY_ADMIN_URL, exc)
        return False
    if response.status_code != 200:
        logger.warning("Caddy refused the configuration (%s): %s", response.status_code, response.text[:500])
        return False
    return True


# What a host serves changed: push again once the change commits -------------------------------------

# Saves that only record a DNS check, or touch no field a site depends on, push nothing.
CHECK_FIELDS = {"last_check_at", "last_check_found", "last_check_error", "check_failures", "next_check_at"}
PROJECT_FIELDS = {"slug", "production_deployment"}


def _changed(sender, instance=None, update_fields=None, **kwargs) -> None:
    if not settings.CADDY_ADMIN_URL or kwargs.get("raw"):
        return
    if sender is Domain and kwargs.get("created") and instance.status != Domain.Status.VERIFIED:
        return  # a new pending domain: nothing for Caddy yet
    if update_fields is not None:
        fields = set(update_fields)
        if (sender is Domain and fields <= CHECK_FIELDS) or (sender._meta.label == "platform_app.Project"
                                                             and not fields & PROJECT_FIELDS):
            return
    enqueue(CADDY_SYNC_TASK)


for _label in ("platform_app.Domain", "platform_app.Project", "platform_app.FirewallRule",
               "platform_app.AnalyticsSettings"):
    post_save.connect(_changed, sender=_label, dispatch_uid=f"caddy-sync-save-{_label}")
    post_delete.connect(_changed, sender=_label, dispatch_uid=f"caddy-sync-delete-{_label}")
