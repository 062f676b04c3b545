"""The one place that says where a project and a deployment are served.

`<project>.<DEPLOY_DOMAIN>` is a project's production address (its first web component's, when it has one),
`<project>-<short id>.<DEPLOY_DOMAIN>` one deployment's, `<component>--<project>.<DEPLOY_DOMAIN>` one component's,
`<project>-tunnel.<DEPLOY_DOMAIN>` its tunnel's (docs/tunnel.md): project slugs never end in `-tunnel` nor hold
`--`, and a short id has 8 characters, so none of these labels is another's. The scheme is `DEPLOY_SCHEME`
(`http` for `make run`; `https` where the platform sits behind TLS) and the port `DEPLOY_PORT` (left out when it
is the scheme's default)."""
import re

from django.conf import settings

from platform_app.models import Deployment

DEFAULT_PORTS = {"http": "80", "https": "443"}
# A deployment's address is `<slug>-<short id>`: exactly SHORT_ID_LENGTH characters of the id after `dpl_`
# (a prefix must not do, or ids could be walked one character at a time).
SHORT_ID_LENGTH = 8
_SHORT_ID = re.compile(rf"[a-z0-9]{{{SHORT_ID_LENGTH}}}")
TUNNEL_SUFFIX = "-tunnel"  # `<slug>-tunnel` is the tunnel's label: reserved, no project slug may end with it


def _origin(host: str) -> str:
    scheme = settings.DEPLOY_SCHEME
    port = str(settings.DEPLOY_PORT or "")
    suffix = f":{port}" if port and port != DEFAULT_PORTS.get(scheme) else ""
    return f"{scheme}://{host}{suffix}/"


def short_id(deployment) -> str:
    return deployment.pk.removeprefix("dpl_")[:SHORT_ID_LENGTH]


def project_url(project) -> str:
    """The address that serves the project's production deployment."""
    return _origin(f"{project.slug}.{settings.DEPLOY_DOMAIN}")


def deployment_url(deployment) -> str:
    """The address that serves exactly this deployment (previews, and production before promotion)."""
    return _origin(f"{deployment.project.slug}-{short_id(deployment)}.{settings.DEPLOY_DOMAIN}")


def component_url(component) -> str:
    """The address that serves a component (a project slug never holds "--")."""
    return _origin(f"{component.name}--{component.project.slug}.{settings.DEPLOY_DOMAIN}")


def deployment_at(label: str):
    """The deployment whose address is the DNS label `label` (`<slug>-<short id>`), or None. The edge asks this
    before it reads `label` as a project's slug, so no project slug can shadow a deployment's address."""
    slug, _, short = label.rpartition("-")
    if not slug or not _SHORT_ID.fullmatch(short):
        return None
    return (Deployment.objects.select_related("project").filter(project__slug=slug, pk__startswith=f"dpl_{short}")
            .order_by("created_at").first())


def tunnel_url(project) -> str:
    """The address the project's tunnel serves (a developer's machine through `manage.py tunnel`)."""
    return _origin(f"{project.slug}{TUNNEL_SUFFIX}.{settings.DEPLOY_DOMAIN}")


def tunnel_slug(label: str) -> str | None:
    """The project slug of a tunnel label (`shop-tunnel` → `shop`), None for any other label."""
    slug = label.removesuffix(TUNNEL_SUFFIX)
    return slug if slug != label and slug else None
