"""Which addresses and host names the outbound guard (`config/outbound.py`) accepts.

Hosts are read the way resolvers, curl, git and browsers read them (inet_aton's `0x7f.1`, `2130706433`,
`0177.0.0.1`, `127.1`; IDNA; IPv6 literals), so that no notation reaches an address the check did not see.
An address is accepted when it is global unicast, or inside OUTBOUND_ALLOWED_NETWORKS; an IPv6 address
carrying an IPv4 one (mapped, compatible, 6to4, NAT64) must pass with both. Cloud metadata addresses,
"no address" (0.0.0.0/8, ::) and multicast are refused whatever the settings say.
"""
import ipaddress
import re
from functools import lru_cache

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

# Refused whatever OUTBOUND_ALLOWED_NETWORKS says: instance metadata services and "no address at all".
ALWAYS_REFUSED = tuple(ipaddress.ip_network(n) for n in (
    "0.0.0.0/8", "169.254.169.254/32", "169.254.170.2/32", "169.254.169.123/32", "168.63.129.16/32",
    "100.100.100.200/32", "192.0.0.192/32", "255.255.255.255/32", "::/128", "fd00:ec2::254/128",
    "fd00:ec2::23/128"))
# Not "global" by any reading, but Python's tables miss them.
ALSO_REFUSED = tuple(ipaddress.ip_network(n) for n in ("100.64.0.0/10", "64:ff9b:1::/48", "198.18.0.0/15"))
REFUSED_NAMES = {"localhost", "metadata", "metadata.google.internal", "metadata.goog", "instance-data",
                 "instance-data.ec2.internal"}
REFUSED_SUFFIXES = (".localhost",)  # RFC 6761: always this machine
NAT64 = ipaddress.ip_network("64:ff9b::/96")
NAME_LABEL = re.compile(r"^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$")
NUMERIC_PART = re.compile(r"^(?:0x[0-9a-f]*|[0-9]+)$")


def ip_or_none(text: str):
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def _ipv4_number(host: str):
    """inet_aton's reading of a host (what curl, git and browsers connect to): 1 to 4 parts, each decimal,
    0x-hex or 0-octal, the last part filling the remaining bytes. None if the host is not numeric."""
    parts = host.split(".")
    if not 1 <= len(parts) <= 4 or not all(NUMERIC_PART.match(p) for p in parts):
        return None
    values = []
    for part in parts:
        if part.startswith("0x"):
            values.append(int(part[2:] or "0", 16))
        elif len(part) > 1 and part.startswith("0"):
            if not set(part) <= set("01234567"):
                return None
            values.append(int(part, 8))
        else:
            values.append(int(part))
    *head, last = values
    if any(v > 255 for v in head) or last >= 256 ** (4 - len(head)):
        return None
    number = last
    for i, v in enumerate(head):
        number += v << (8 * (3 - i))
    return ipaddress.IPv4Address(number)


def _embedded_ipv4(ip):
    """The IPv4 address an IPv6 address carries (mapped, compatible, 6to4, NAT64), if any."""
    if ip.version != 6:
        return None
    if ip.ipv4_mapped or ip.sixtofour:
        return ip.ipv4_mapped or ip.sixtofour
    value = int(ip)
    if value >> 32 == 0 and value > 1:                      # ::a.b.c.d (deprecated "compatible")
        return ipaddress.IPv4Address(value & 0xFFFFFFFF)
    if value >> 32 == 0xFFFF0000 or ip in NAT64:             # SIIT ::ffff:0:a.b.c.d, NAT64
        return ipaddress.IPv4Address(value & 0xFFFFFFFF)
    return None


@lru_cache(maxsize=8)
def _networks(values: tuple) -> tuple:
    try:
        return tuple(ipaddress.ip_network(v.strip(), strict=False) for v in values if v.strip())
    except ValueError as exc:
        raise ImproperlyConfigured(f"OUTBOUND_ALLOWED_NETWORKS: {exc}")


def address_allowed(ip, networks=None) -> bool:
    """May the platform connect to this address? (See the module docstring.) `networks`: the CIDRs opened
    although private; OUTBOUND_ALLOWED_NETWORKS when not given (a sandbox's egress passes its own)."""
    if ip.version == 6 and ip.ipv4_mapped:
        ip = ip.ipv4_mapped
    embedded = _embedded_ipv4(ip)
    for candidate in filter(None, (ip, embedded)):
        if candidate.is_multicast or candidate.is_unspecified or any(candidate in n for n in ALWAYS_REFUSED
                                                                     if n.version == candidate.version):
            return False
    if networks is None:
        networks = getattr(settings, "OUTBOUND_ALLOWED_NETWORKS", ())
    allowed = _networks(tuple(networks))
    if any(ip in n for n in allowed if n.version == ip.version):
        return True
    return all(c.is_global and not any(c in n for n in ALSO_REFUSED if n.version == c.version)
               for c in filter(None, (ip, embedded)))


def host_normalize(raw: str) -> str | None:
    """The host as a lower-case ASCII name or IP literal, or None when it is not one we accept."""
    if not raw or "%" in raw:  # percent-encoding and IPv6 zone ids: refused
        return None
    if ":" in raw:
        ip = ip_or_none(raw)
        return str(ip) if ip and ip.version == 6 else None
    if not raw.isascii():
        try:
            raw = raw.encode("idna").decode("ascii")
        except UnicodeError:
            return None
    raw = raw.lower().removesuffix(".")
    labels = raw.split(".")
    if NUMERIC_PART.match(labels[-1]):  # a numeric last part means an IPv4 address, or nothing
        number = _ipv4_number(raw)
        return str(number) if number else None
    if len(raw) > 253 or not all(NAME_LABEL.match(label) for label in labels):
        return None
    return raw


def name_refused(host: str) -> bool:
    """Names that mean this machine or a metadata service, refused before any lookup."""
    return host in REFUSED_NAMES or host.endswith(REFUSED_SUFFIXES)
