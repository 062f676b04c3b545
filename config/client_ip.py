"""The client's address, as every service sees it.

`TRUSTED_PROXY_COUNT` says how many proxies we run in front of the application. Each proxy appends the
address it received the connection from to `X-Forwarded-For`, so only the rightmost entries were written by
us; everything to their left was written by the client and can be forged. With N proxies the client's
address is the entry N from the right (the one our outermost proxy appended). 0 means no proxy:
`REMOTE_ADDR`.
"""
import ipaddress

from django.conf import settings


def ip_normalize(value: str) -> str | None:
    """A canonical textual address (IPv6 compressed, IPv4-mapped IPv6 as IPv4, no port or zone), or None."""
    value = (value or "").strip().strip('"')
    if value.startswith("["):  # "[2001:db8::1]:443"
        value = value[1:].split("]", 1)[0]
    elif value.count(":") == 1:  # "203.0.113.7:5678"
        value = value.split(":", 1)[0]
    value = value.split("%", 1)[0]  # fe80::1%eth0: the zone means nothing to us
    try:
        address = ipaddress.ip_address(value)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return str(address)


def client_ip(request) -> str:
    remote = ip_normalize(request.META.get("REMOTE_ADDR", "")) or "unknown"
    proxies = max(0, int(getattr(settings, "TRUSTED_PROXY_COUNT", 0) or 0))
    if not proxies:
        return remote
    entries = [e for e in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if e.strip()]
    if len(entries) < proxies:
        return remote  # the request skipped a proxy we expect: nothing in the header can be trusted
    return ip_normalize(entries[-proxies]) or remote
