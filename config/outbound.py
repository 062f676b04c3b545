"""Outbound requests to addresses users supply: one guard for every service.

`outbound_check(url)` parses a URL, resolves its name with dnspython and refuses anything that points
inside: loopback, private, link-local, unique-local, multicast, unspecified, reserved, CGNAT and cloud
metadata addresses, in every notation resolvers and browsers accept (`0x7f.1`, `2130706433`, `0177.0.0.1`,
`[::ffff:127.0.0.1]`, 6to4, NAT64...). If any resolved address is refused, the URL is refused.
`OUTBOUND_ALLOWED_NETWORKS` lets an operator open private networks (a self-hosted Git server).

`outbound_request(...)` then connects to the checked address only (no second lookup, so DNS rebinding
cannot swap it), keeps the Host header and TLS SNI/verification on the name, follows redirects itself
re-checking every hop, and bounds the connect time, the total time and the response size.

Every refusal and every network failure raises `OutboundRefused` with one message, so an answer never
reveals what listens inside; the reason goes to the `outbound` log.
"""
import ipaddress
import logging
import re
import ssl
import time
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING
from urllib.parse import urljoin, urlsplit, urlunsplit

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from config.errors import ValidationFailed
from config.outbound_addresses import address_allowed, host_normalize, ip_or_none, name_refused

if TYPE_CHECKING:  # dnspython and httpx load where a name is resolved or a request made, not with this module
    import dns.nameserver
    import dns.resolver
    import httpx

logger = logging.getLogger("outbound")

UNREACHABLE = "This address cannot be reached from the platform."
REDIRECTS = (301, 302, 303, 307, 308)
DEFAULT_PORTS = {"http": 80, "https": 443}


class OutboundRefused(ValidationFailed):
    """The address is refused, or could not be reached: always the same message."""

    status, code, default_message = 400, "url_not_allowed", UNREACHABLE


@dataclass(frozen=True)
class Target:
    """A checked URL: the name as given and the addresses it may be reached at."""

    url: str
    scheme: str
    host: str                      # lower-case ASCII name, or an IP literal without brackets
    port: int
    addresses: tuple[str, ...]     # every one checked; connect to these, never resolve again
    purpose: str = ""

    @property
    def is_literal(self) -> bool:
        return ip_or_none(self.host) is not None

    @property
    def host_header(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if DEFAULT_PORTS.get(self.scheme) == self.port else f"{host}:{self.port}"

    def url_for(self, address: str) -> str:
        """This target's URL with the host replaced by one of its checked addresses."""
        parts = urlsplit(self.url)
        host = f"[{address}]" if ":" in address else address
        return urlunsplit((parts.scheme, f"{host}:{self.port}", parts.path or "/", parts.query, ""))


def _refuse(url: str, purpose: str, reason: str, code: str | None = None):
    logger.info("outbound %s refused %r: %s", purpose or "request", url[:300], reason)
    raise OutboundRefused(code=code)


def outbound_resolver(servers=None, timeout: float | None = None) -> "dns.resolver.Resolver":
    """The resolver every check of a user-supplied name uses: `servers` (`ip[:port]`), else OUTBOUND_DNS_SERVERS,
    else the system's. A sandbox's egress passes its own, outside Django."""
    import dns.resolver

    if servers is None:
        servers = getattr(settings, "OUTBOUND_DNS_SERVERS", [])
    servers = [s for s in servers if s]
    resolver = dns.resolver.Resolver(configure=not servers)
    if servers:
        resolver.nameservers = [_nameserver(s) for s in servers]
    resolver.lifetime = resolver.timeout = timeout or settings.OUTBOUND_DNS_TIMEOUT_SECONDS
    return resolver


def _nameserver(value: str) -> "dns.nameserver.Do53Nameserver":
    import dns.nameserver

    value = value.strip()
    if value.startswith("["):
        host, _, port = value[1:].partition("]")
        port = port.removeprefix(":")
    elif value.count(":") == 1:
        host, port = value.split(":")
    else:
        host, port = value, ""
    if not ip_or_none(host) or (port and not port.isdigit()):
        raise ImproperlyConfigured(f"OUTBOUND_DNS_SERVERS: {value!r} is not ip[:port].")
    return dns.nameserver.Do53Nameserver(host, int(port or 53))


def resolve_addresses(host: str, resolver: "dns.resolver.Resolver | None" = None) -> list[str]:
    """Every A and AAAA address of `host` (dns.exception.DNSException when the lookup fails)."""
    import dns.resolver

    resolver, found = resolver or outbound_resolver(), []
    for rdtype in ("A", "AAAA"):
        try:
            answer = resolver.resolve(f"{host}.", rdtype, search=False)
        except (dns.resolver.NXDOMAIN, dns.resolver.NoAnswer):
            continue
        found += [r.address for r in answer]
    return found


def outbound_check(url: str, *, purpose: str = "", allow_http: bool | None = None) -> Target:
    """Parse, resolve and check `url`; a Target to connect to, or OutboundRefused. `allow_http` overrides
    OUTBOUND_ALLOW_HTTP where the platform, not the user, chose the scheme."""
    url = (url or "").strip()
    if not url or len(url) > 2048 or any(ord(c) <= 0x20 or ord(c) == 0x7F or c == "\\" for c in url):
        _refuse(url, purpose, "malformed")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        _refuse(url, purpose, "unparsable")
    allow_http = settings.OUTBOUND_ALLOW_HTTP if allow_http is None else allow_http
    schemes = {"https"} | ({"http"} if allow_http else set())
    if parts.scheme.lower() not in schemes:
        _refuse(url, purpose, f"scheme {parts.scheme!r}")
    if "@" in parts.netloc:
        _refuse(url, purpose, "userinfo")
    host = host_normalize(parts.hostname or "")
    if host is None or port == 0:
        _refuse(url, purpose, "host or port")
    if name_refused(host):
        _refuse(url, purpose, "reserved name")
    scheme = parts.scheme.lower()
    port = port or DEFAULT_PORTS[scheme]
    literal = ip_or_none(host)
    if literal is not None:
        addresses = [str(literal)]
    else:
        import dns.exception

        try:
            addresses = resolve_addresses(host)
        except dns.exception.DNSException as exc:
            _refuse(url, purpose, f"DNS: {exc.__class__.__name__}")
        if not addresses:
            _refuse(url, purpose, "no address")
    refused = [a for a in addresses if not address_allowed(ipaddress.ip_address(a))]
    if refused:
        _refuse(url, purpose, f"address {', '.join(refused)}")
    netloc = (f"[{host}]" if ":" in host else host) + (f":{port}" if parts.port else "")
    normal = urlunsplit((scheme, netloc, parts.path, parts.query, ""))
    return Target(url=normal, scheme=scheme, host=host, port=port, addresses=tuple(dict.fromkeys(addresses)),
                  purpose=purpose)


HOST_CHARACTERS = re.compile(r"^[A-Za-z0-9._:-]{1,253}$")


def host_url(host: str, port: int | None = None, path: str = "/") -> str:
    """`http://host[:port]path` for a bare host name or IP address (IPv6 in brackets)."""
    netloc = f"[{host}]" if ":" in host else host
    return f"http://{netloc}{f':{port}' if port else ''}{path}"


def outbound_host_check(host: str, *, purpose: str = "") -> Target:
    """A bare host a user gave (a node's address: a name or an IP literal, no scheme, port or path), checked
    as `outbound_check` checks a URL's host; OutboundRefused otherwise."""
    host = (host or "").strip()
    if not HOST_CHARACTERS.match(host) or (":" in host and ip_or_none(host) is None):
        _refuse(host, purpose, "not a host name or address")
    return outbound_check(host_url(host), purpose=purpose, allow_http=True)


@dataclass
class OutboundResponse:
    status_code: int
    headers: "httpx.Headers"
    content: bytes
    url: str                        # the final URL (after redirects), with its name
    target: Target                  # what it was fetched from
    history: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", errors="replace")

    def json(self):
        import json

        return json.loads(self.content)


def outbound_request(method: str, url: str, *, purpose: str = "", headers: dict | None = None,
                     content: bytes | None = None, json=None, read_body: bool = True,
                     max_bytes: int | None = None, timeout: float | None = None, follow_redirects: bool = True,
                     allow_http: bool | None = None) -> OutboundResponse:
    """One request to a user-supplied URL through the guard (module docstring); OutboundRefused otherwise.
    Without `follow_redirects` a redirect is the answer (a proxy passes it on)."""
    import json as jsonlib

    if json is not None:
        content = jsonlib.dumps(json).encode()
        headers = {"Content-Type": "application/json", **(headers or {})}
    headers = {"Accept-Encoding": "identity", **(headers or {})}
    max_bytes = settings.OUTBOUND_MAX_RESPONSE_BYTES if max_bytes is None else max_bytes
    deadline = time.monotonic() + (timeout or settings.OUTBOUND_TIMEOUT_SECONDS)
    history, target = [], outbound_check(url, purpose=purpose, allow_http=allow_http)  # before any client exists
    import httpx

    with httpx.Client(trust_env=False, follow_redirects=False, verify=_tls(settings.OUTBOUND_CA_BUNDLE)) as client:
        for hop in range(settings.OUTBOUND_MAX_REDIRECTS + 1):
            target = target if hop == 0 else outbound_check(url, purpose=purpose, allow_http=allow_http)
            status, resp_headers, body = _send(client, target, method, headers, content, deadline, max_bytes,
                                               read_body)
            location = resp_headers.get("location")
            if status not in REDIRECTS or not location or not follow_redirects:
                return OutboundResponse(status, resp_headers, body, target.url, target, history)
            history.append(target.url)
            url = urljoin(target.url, location)
            if status == 303 or (status in (301, 302) and method.upper() == "POST"):
                method, content = "GET", None
                headers = {k: v for k, v in headers.items() if k.lower() != "content-type"}
            if urlsplit(url)[:2] != urlsplit(target.url)[:2]:  # credentials never follow to another origin
                headers = {k: v for k, v in headers.items() if k.lower() not in ("authorization", "cookie")}
    _refuse(url, purpose, "too many redirects")


@lru_cache(maxsize=4)
def _tls(bundle: str) -> ssl.SSLContext:
    # Loading a CA bundle costs tens of milliseconds: once per process, not per request.
    import certifi

    return ssl.create_default_context(cafile=bundle or certifi.where())


def _send(client, target: Target, method, headers, content, deadline, max_bytes, read_body):
    import httpx

    last_error = "no address"
    for address in target.addresses:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        extensions = {} if target.is_literal or target.scheme != "https" else {"sni_hostname": target.host}
        request = client.build_request(
            method, target.url_for(address), headers={**headers, "Host": target.host_header}, content=content,
            extensions=extensions,
            timeout=httpx.Timeout(remaining, connect=min(settings.OUTBOUND_CONNECT_TIMEOUT_SECONDS, remaining)))
        try:
            response = client.send(request, stream=True)
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:  # try the next checked address
            last_error = f"{address}: {exc.__class__.__name__}"
            continue
        except httpx.HTTPError as exc:
            last_error = f"{address}: {exc.__class__.__name__}"
            break
        try:
            return response.status_code, response.headers, _read(response, deadline, max_bytes, read_body, target)
        except httpx.HTTPError as exc:
            last_error = f"{address}: {exc.__class__.__name__} while reading"
            break
        finally:
            response.close()
    _refuse(target.url, target.purpose, last_error)


def _read(response, deadline, max_bytes, read_body, target) -> bytes:
    if not read_body:
        return b""
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > max_bytes:
        _refuse(target.url, target.purpose, f"response of {declared} bytes", code="response_too_large")
    chunks, size = [], 0
    for chunk in response.iter_bytes():
        size += len(chunk)
        if size > max_bytes:
            _refuse(target.url, target.purpose, "response too large", code="response_too_large")
        if time.monotonic() > deadline:
            _refuse(target.url, target.purpose, "total timeout")
        chunks.append(chunk)
    return b"".join(chunks)
