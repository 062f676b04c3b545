"""The node's relays, on one event loop thread per process: what crosses a sandbox's network namespace.

- **Egress**: an HTTP proxy listening on the sandbox's loopback (127.0.0.1:3128 inside, given to the command as
  HTTP_PROXY / HTTPS_PROXY). `CONNECT host:port` and absolute-form `GET http://...` requests go through the
  outbound guard's address rules (config/outbound_addresses.py): the name is resolved here, by the node, and
  every address must be global unicast or inside the sandbox's allowed networks; loopback, private, link-local
  and metadata addresses are refused with 403 and one message, whatever the notation. The connection is made to
  the checked address only, so a second lookup cannot swap it.
- **Endpoints**: an internal service on the sandbox's allow-list, listened for inside at 127.0.0.1:<local port>
  and relayed to its real address through its protocol guard (guards.py).
- **Ingress**: `forward(listener, connect)` relays connections accepted on a node socket to a sandbox's port.
"""
import asyncio
import ipaddress
import logging
import threading
from urllib.parse import urlsplit, urlunsplit


from config.outbound import UNREACHABLE, outbound_resolver, resolve_addresses
from config.outbound_addresses import address_allowed, host_normalize, ip_or_none, name_refused
from platform_app.sandbox import guards

logger = logging.getLogger("sandbox.egress")
HEAD_LIMIT = 64 * 1024
CONNECT_TIMEOUT = 10.0
HOP_HEADERS = ("proxy-connection", "proxy-authorization", "connection", "keep-alive")

_loop: asyncio.AbstractEventLoop | None = None
_loop_lock = threading.Lock()


def loop() -> asyncio.AbstractEventLoop:
    """The process's relay loop, started on first use on a daemon thread."""
    global _loop
    with _loop_lock:
        if _loop is None:
            _loop = asyncio.new_event_loop()
            threading.Thread(target=_loop.run_forever, name="sandbox-relays", daemon=True).start()
        return _loop


def call(coro, timeout: float = 10.0):
    """Run `coro` on the relay loop and wait for its result."""
    return asyncio.run_coroutine_threadsafe(coro, loop()).result(timeout)


class Refused(Exception):
    pass


class EgressPolicy:
    """Which addresses a sandbox's egress may connect to."""

    def __init__(self, networks=(), dns_servers=(), dns_timeout: float = 3.0):
        self.networks = tuple(networks)
        self.dns_servers, self.dns_timeout = tuple(dns_servers), dns_timeout

    def address_for(self, host: str, port: int) -> str:
        import dns.exception

        """The one address to connect to for `host`:`port`, or Refused (the reason for the node's log)."""
        name = host_normalize(host.strip("[]"))
        if name is None or name_refused(name) or not 0 < port < 65536:
            raise Refused(f"{host}:{port}: not a name or address it may reach")
        if ip_or_none(name) is not None:
            addresses = [name]
        else:
            try:
                addresses = resolve_addresses(name, outbound_resolver(self.dns_servers, self.dns_timeout))
            except dns.exception.DNSException as exc:
                raise Refused(f"{name}: DNS {exc.__class__.__name__}")
        refused = [a for a in addresses if not address_allowed(ipaddress.ip_address(a), self.networks)]
        if not addresses or refused:
            raise Refused(f"{name}: address {', '.join(refused) or 'none'}")
        return addresses[0]


# -- plumbing -------------------------------------------------------------------------------------------------
async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while chunk := await reader.read(65536):
            writer.write(chunk)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except (ConnectionError, OSError, RuntimeError):
        pass


async def _bridge(client: tuple, upstream: tuple) -> None:
    try:
        await asyncio.gather(_pipe(client[0], upstream[1]), _pipe(upstream[0], client[1]))
    finally:
        for writer in (client[1], upstream[1]):
            writer.close()


def _answer(writer: asyncio.StreamWriter, status: str, text: str = "") -> None:
    body = (text + "\n").encode() if text else b""
    writer.write(f"HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: {len(body)}\r\n"
                 f"Connection: close\r\n\r\n".encode() + body)
    writer.close()


def _host_port(authority: str, default: int) -> tuple[str, int]:
    if authority.startswith("["):
        host, _, rest = authority[1:].partition("]")
        port = rest.removeprefix(":")
    else:
        host, _, port = authority.rpartition(":") if authority.count(":") == 1 else (authority, "", "")
    if port and not port.isdigit():
        raise ValueError(authority)
    return host, int(port or default)


# -- egress ---------------------------------------------------------------------------------------------------
async def _egress_client(reader, writer, policy: EgressPolicy, label: str) -> None:
    try:
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)
        request_line, *header_lines = head.decode("latin-1").split("\r\n")
        method, target, version = request_line.split(" ")
        if method == "CONNECT":
            host, port = _host_port(target, 443)
        else:
            parts = urlsplit(target)
            if parts.scheme != "http" or not parts.netloc:
                _answer(writer, "400 Bad Request", "Send absolute http:// URLs, or CONNECT for https.")
                return
            host, port = _host_port(parts.netloc.rpartition("@")[2], 80)
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, asyncio.TimeoutError, ValueError,
            ConnectionError):
        writer.close()
        return
    try:
        address = await asyncio.get_running_loop().run_in_executor(None, policy.address_for, host, port)
    except Refused as exc:
        logger.info("egress of %s refused %s", label, exc)
        _answer(writer, "403 Forbidden", UNREACHABLE)
        return
    try:
        upstream = await asyncio.wait_for(asyncio.open_connection(address, port), CONNECT_TIMEOUT)
    except (OSError, asyncio.TimeoutError):
        _answer(writer, "502 Bad Gateway", UNREACHABLE)
        return
    if method == "CONNECT":
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
    else:
        path = urlunsplit(("", "", parts.path or "/", parts.query, ""))
        kept = [line for line in header_lines if line and line.split(":", 1)[0].strip().lower() not in HOP_HEADERS]
        upstream[1].write("\r\n".join([f"{method} {path} {version}", *kept, "Connection: close", "", ""])
                          .encode("latin-1"))
    await _bridge((reader, writer), upstream)


async def _endpoint_client(reader, writer, endpoint) -> None:
    """Relay to an endpoint through its protocol guard (guards.py); an unknown guard refuses everything."""
    async def open_upstream():
        return await asyncio.wait_for(asyncio.open_connection(endpoint.host, endpoint.port), CONNECT_TIMEOUT)

    guard = endpoint.guard or {}
    try:
        if not guard:
            await _bridge((reader, writer), await open_upstream())
        elif guard.get("kind") == "postgres":
            upstream = await guards.postgres(reader, writer, open_upstream, user=guard["user"],
                                             database=guard["database"])
            if upstream is not None:
                await _bridge((reader, writer), upstream)
        elif guard.get("kind") == "redis":
            guarded = await guards.redis(reader, writer, open_upstream, user=guard["user"], password=guard["password"],
                                         max_command_bytes=guard.get("maxCommandBytes", guards.MAX_COMMAND))
            if guarded is not None:
                upstream, pump = guarded
                await asyncio.gather(pump(), _pipe(upstream[0], writer))
        else:
            writer.close()
    except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError, ValueError, KeyError):
        writer.close()


async def _serve(sock, handler) -> asyncio.AbstractServer:
    sock.setblocking(False)
    return await asyncio.start_server(handler, sock=sock, limit=HEAD_LIMIT)


def _stopper(server):
    """A function that stops `server` and closes its socket, once it has, on the relay loop."""

    async def close():
        server.close()

    return lambda: call(close())


def serve_egress(sock, policy: EgressPolicy, label: str = "sandbox"):
    """Proxy connections accepted on `sock` through `policy`; returns a function that stops it."""
    return _stopper(call(_serve(sock, lambda r, w: _egress_client(r, w, policy, label))))


def serve_endpoint(sock, endpoint):
    """Relay connections accepted on `sock` to `endpoint` (through its guard); returns a function that stops it."""
    return _stopper(call(_serve(sock, lambda r, w: _endpoint_client(r, w, endpoint))))


# -- ingress --------------------------------------------------------------------------------------------------
async def _ingress_client(reader, writer, connect) -> None:
    try:
        sock = await asyncio.get_running_loop().run_in_executor(None, connect)
        sock.setblocking(False)
        upstream = await asyncio.open_connection(sock=sock)
    except OSError:
        writer.close()
        return
    await _bridge((reader, writer), upstream)


def forward(listener, connect):
    """Relay connections accepted on the node socket `listener` to `connect()` (a connected socket, e.g. a
    sandbox's port); returns a function that stops it."""
    return _stopper(call(_serve(listener, lambda r, w: _ingress_client(r, w, connect))))
