"""What the edge does with a request for a custom domain (platform_app/edge.py), and whether Caddy may get
a certificate for a name (its on-demand TLS `ask`)."""
import re
from dataclasses import dataclass

from django.conf import settings
from django.db.models import OuterRef, Subquery
from django.http.request import validate_host

from platform_app.models import Deployment, Domain, Project
from platform_app.services.projects.addresses import deployment_at, tunnel_slug

PORT = re.compile(r"[0-9]{1,5}")


@dataclass(frozen=True)
class DomainRedirect:
    """Answer 308 to the same path and query on `host` (the primary domain, or the domain's `redirectTo`)."""

    host: str
    project_id: str  # the edge applies the project's firewall before redirecting

    def location(self, request) -> str:
        port = request.META.get("HTTP_HOST", "").rpartition("]")[2].partition(":")[2]
        if not PORT.fullmatch(port):  # only a port is kept: `shop.test:@evil.example` must not name another host
            port = ""
        return f"{request.scheme}://{self.host}{':' + port if port else ''}{request.get_full_path()}"


def _platform_host(host: str) -> bool:
    """The platform's own names (an IP, a single label, ALLOWED_HOSTS bar `*`): never a custom domain, so
    the platform's own requests cost no lookup."""
    if not host or "." not in host or host.rsplit(".", 1)[1].isdigit() or ":" in host:
        return True
    return validate_host(host, [h for h in settings.ALLOWED_HOSTS if h != "*"])


def domain_resolve(host: str):
    """For a request's host name (no port, lower case): None when it is no custom domain the edge serves
    (the platform handles the request), a `DomainRedirect`, the `Deployment` to serve, or False (a verified
    domain with nothing deployed yet: the edge's 404). One indexed query on the name; a branch domain adds one."""
    host = host.rstrip(".")  # the fully qualified form names the same domain
    if _platform_host(host):
        return None
    primary = Domain.objects.filter(project=OuterRef("project"), primary=True, status=Domain.Status.VERIFIED)
    domain = (Domain.objects.filter(name=host, status=Domain.Status.VERIFIED)
              .annotate(primary_name=Subquery(primary.values("name")[:1]))
              .select_related("project__production_deployment__project").first())
    if domain is None:
        return None
    if domain.redirect_to:
        return DomainRedirect(domain.redirect_to, domain.project_id)
    if not domain.git_branch and domain.primary_name and domain.primary_name != domain.name:
        return DomainRedirect(domain.primary_name, domain.project_id)
    if domain.git_branch:
        return (Deployment.objects.select_related("project")
                .filter(project=domain.project, branch=domain.git_branch, status=Deployment.Status.READY)
                .order_by("-created_at").first() or False)
    return domain.project.production_deployment or False


def _platform_tls_name(name: str) -> bool:
    """The platform's own names (DOMAINS_RESERVED) and what the edge serves under DEPLOY_DOMAIN: a project's
    `<slug>`, a deployment's `<slug>-<short id>` (the full short id, as the edge requires), a project's tunnel
    `<slug>-tunnel`."""
    if name in settings.DOMAINS_RESERVED:
        return True
    suffix = "." + settings.DEPLOY_DOMAIN
    label = name[: -len(suffix)] if name.endswith(suffix) else ""
    if not label or "." in label:
        return False
    if deployment_at(label) is not None or Project.objects.filter(slug=label).exists():
        return True
    return tunnel_slug(label) is not None and Project.objects.filter(slug=tunnel_slug(label)).exists()


def tls_allowed(name: str) -> bool:
    """Caddy's on-demand TLS `ask`: a certificate for a verified custom domain, and for the platform's own names
    (itself, `<slug>.DEPLOY_DOMAIN`, `<slug>-<short id>.DEPLOY_DOMAIN`) unless CADDY_ASK_PLATFORM_NAMES is off;
    never for anything else."""
    name = (name or "").strip().rstrip(".").lower()
    if not name or len(name) > 253:
        return False
    if settings.CADDY_ASK_PLATFORM_NAMES and _platform_tls_name(name):
        return True
    return Domain.objects.filter(name=name, status=Domain.Status.VERIFIED).exists()
