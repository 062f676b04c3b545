"""The one place that says where a project and a deployment are served.

`<project>.<DEPLOY_DOMAIN>` is a project's production address, `<project>-<short id>.<DEPLOY_DOMAIN>` one
deployment's, `<project>-tunnel.<DEPLOY_DOMAIN>` its tunnel's (docs/tunnel.md): project slugs ending in `-tunnel`
are refused, so that label never names a project, and a short id has 8 characters, so it never names a deployment.
The scheme is `DEPLOY_SCHEME` (`http` for `make run`; `https` where the platform sits behind TLS) and the port
`DEPLOY_PORT` (left out when it is the scheme's default)."""
from django.conf import settings

DEFAULT_PORTS = {"http": "80", "https": "443"}
TUNNEL_SUFFIX = "-tunnel"  # `<slug>-tunnel` is the tunnel's label: reserved, no project slug may end with it


def _origin(host: str) -> str:
    scheme = settings.DEPLOY_SCHEME
    port = str(settings.DEPLOY_PORT or "")
    suffix = f":{port}" if port and port != DEFAULT_PORTS.get(scheme) else ""
    return f"{scheme}://{host}{suffix}/"


def short_id(deployment) -> str:
    return deployment.pk.removeprefix("dpl_")[:8]


def project_url(project) -> str:
    """The address that serves the project's production deployment."""
    return _origin(f"{project.slug}.{settings.DEPLOY_DOMAIN}")


def deployment_url(deployment) -> str:
    """The address that serves exactly this deployment (previews, and production before promotion)."""
    return _origin(f"{deployment.project.slug}-{short_id(deployment)}.{settings.DEPLOY_DOMAIN}")


def tunnel_url(project) -> str:
    """The address the project's tunnel serves (a developer's machine through `manage.py tunnel`)."""
    return _origin(f"{project.slug}{TUNNEL_SUFFIX}.{settings.DEPLOY_DOMAIN}")


def tunnel_slug(label: str) -> str | None:
    """The project slug of a tunnel label (`shop-tunnel` → `shop`), None for any other label."""
    slug = label.removesuffix(TUNNEL_SUFFIX)
    return slug if slug != label and slug else None
