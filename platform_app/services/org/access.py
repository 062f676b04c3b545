"""Who may act in a workspace, and from where: its IP allowlist and its "require SSO" rule, checked on every request
to the workspace's API routes (`/v1/orgs/{orgId}/...`, platform_app/api/base.py) and dashboard pages
(platform_app/pages/base.py), after the membership check and before scopes and roles. One query reads both rules;
a session that must prove SSO costs one more.

- **IP allowlist**: when the workspace has entries, the client address (config/client_ip.py, the trusted-proxy
  rule) must be inside one of them, else 403 `ip_not_allowed`.
- **Require SSO**: a member whose role is not exempt (SSO_REQUIRE_EXEMPT_ROLES, owners by default: the break-glass
  path) acts only with a session started through the workspace's single sign-on (an API session with an
  `SsoSession` row, a dashboard session carrying the workspace in `SSO_COOKIE_KEY`), or with an API token of a
  user whose identity at that provider is linked (they signed in through it at least once). Else 403
  `sso_required`, naming where to sign in.
"""
import ipaddress

from django.conf import settings

from config.errors import Forbidden
from platform_app.models import SsoIdentity, SsoSession, Workspace

SSO_COOKIE_KEY = "sso_workspaces"  # dashboard session: the ids of the workspaces signed in through SSO


class IpNotAllowed(Forbidden):
    code = "ip_not_allowed"


class SsoRequired(Forbidden):
    code = "sso_required"


def network_parse(value: str):
    """An `ip_network` from a CIDR or a bare address (host bits are cleared: `10.1.2.3/8` is `10.0.0.0/8`);
    ValueError for anything else."""
    value = (value or "").strip()
    if not value or len(value) > 49 or any(c.isspace() for c in value) or "%" in value:
        raise ValueError("not a network")
    network = ipaddress.ip_network(value, strict=False)
    if isinstance(network, ipaddress.IPv6Network) and network.network_address.ipv4_mapped is not None:
        mapped = network.network_address.ipv4_mapped  # ::ffff:a.b.c.d/n is the IPv4 network a.b.c.d/(n-96)
        network = ipaddress.ip_network(f"{mapped}/{max(0, network.prefixlen - 96)}", strict=False)
    return network


def address_allowed(ip: str, cidrs) -> bool:
    """Whether `ip` (as client_ip normalised it) is inside any of `cidrs`."""
    try:
        address = ipaddress.ip_address(ip)
    except ValueError:
        return False  # "unknown": no address, nothing to allow
    for cidr in cidrs:
        try:
            if address in network_parse(cidr):
                return True
        except ValueError:
            continue
    return False


def sso_satisfied(*, workspace, user, token=None, auth_session=None, cookie_session=None) -> bool:
    """Whether this request's credential comes from the workspace's single sign-on (module docstring)."""
    if token is not None:
        return SsoIdentity.objects.filter(workspace=workspace, user=user).exists()
    if auth_session is not None:
        return SsoSession.objects.filter(session=auth_session, workspace=workspace).exists()
    if cookie_session is not None:
        return workspace.pk in (cookie_session.get(SSO_COOKIE_KEY) or [])
    return False


def workspace_access_check(*, workspace, membership, ip: str, token=None, auth_session=None,
                           cookie_session=None) -> None:
    """403 `ip_not_allowed` or `sso_required` when the workspace's rules refuse this request; nothing otherwise."""
    rows = list(Workspace.objects.filter(pk=workspace.pk)
                .values_list("sso_settings__enabled", "sso_settings__require_sso", "ip_allowlist__cidr"))
    cidrs = [cidr for _, _, cidr in rows if cidr]
    if cidrs and not address_allowed(ip, cidrs):
        raise IpNotAllowed(f"Your address ({ip}) is not on this workspace's IP allowlist.", details={"ip": ip})
    enabled, require = (rows[0][0], rows[0][1]) if rows else (False, False)
    if not (enabled and require) or membership.role in settings.SSO_REQUIRE_EXEMPT_ROLES:
        return
    if sso_satisfied(workspace=workspace, user=membership.user_id, token=token, auth_session=auth_session,
                     cookie_session=cookie_session):
        return
    raise SsoRequired("This workspace requires single sign-on: sign in through its identity provider.",
                      details={"signInUrl": f"/v1/auth/sso/{workspace.slug}/start",
                               "dashboardSignInUrl": f"/sso/{workspace.slug}/start"})
