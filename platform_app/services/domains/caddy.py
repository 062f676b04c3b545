"""TLS in front of the platform through Caddy (docs/deployment.md, "Caddy").

`caddy_config()` is the whole JSON configuration the platform wants Caddy to run: an HTTPS server on
CADDY_HTTPS_PORT for any host name (CADDY_HTTP_PORT answers 308 to it), certificates obtained on demand (ACME, or Caddy's internal CA) for the
names the platform's `ask` endpoint allows (verified custom domains only), every request proxied to the platform
at CADDY_UPSTREAM with its Host kept, so the edge serves it. `caddy_sync()` loads it through the admin API
(POST /load), which Caddy applies without dropping connections; the admin listener stays where it was."""
import logging
from urllib.parse import urlsplit

import httpx
from django.conf import settings

logger = logging.getLogger(__name__)


def _admin_listen() -> str:
    parts = urlsplit(settings.CADDY_ADMIN_URL)
    return parts.netloc or "localhost:2019"


def _https_location() -> str:
    port = "" if settings.CADDY_HTTPS_PORT == 443 else f":{settings.CADDY_HTTPS_PORT}"
    return f"https://{{http.request.host}}{port}{{http.request.uri}}"


def caddy_config() -> dict:
    issuer = {"module": "internal"} if settings.CADDY_TLS_ISSUER == "internal" else {"module": "acme"}
    if issuer["module"] == "acme" and settings.CADDY_ACME_EMAIL:
        issuer["email"] = settings.CADDY_ACME_EMAIL
    config = {
        "admin": {"listen": _admin_listen()},
        "apps": {
            "http": {
                "http_port": settings.CADDY_HTTP_PORT,
                "https_port": settings.CADDY_HTTPS_PORT,
                "servers": {
                    "platform": {
                        "listen": [f"{settings.CADDY_LISTEN_HOST}:{settings.CADDY_HTTPS_PORT}"],
                        "routes": [{"handle": [{
                            "handler": "reverse_proxy",
                            "upstreams": [{"dial": settings.CADDY_UPSTREAM}],
                            "flush_interval": -1,  # server-sent event streams pass at once
                        }]}],
                        # TLS on this listener for any SNI; certificates come from the on-demand policy below
                        "tls_connection_policies": [{}],
                        "automatic_https": {"disable_redirects": True},
                    },
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
