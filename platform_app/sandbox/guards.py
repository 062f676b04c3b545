"""Protocol guards on a sandbox's endpoints: the node speaks just enough of a service's protocol to let a
project reach its own database or key space and nothing else on the same server.

- `postgres`: the client's startup message must name the endpoint's role and database (SSL and GSSAPI
  encryption requests are declined: the relay is on the node's loopback, the client's on its own); anything else
  gets PostgreSQL's own `28000` error and the connection is closed before the server sees a byte. A server
  that trusts local logins cannot be asked for another role through it.
- `redis`: the node logs in upstream as the endpoint's ACL user before relaying; a client `AUTH` with that user
  and password is passed on (and answered `+OK` in order), any other `AUTH` is rewritten to fail, `HELLO` (which
  can log in too) closes the connection. The user's ACL keeps it to its keys; this keeps it that user.

A guard answers the upstream (reader, writer) to bridge, or None when it refused (and closed the client).
"""
import asyncio
import struct

SSL_REQUEST, GSSENC_REQUEST, CANCEL_REQUEST, PROTOCOL_3 = 80877103, 80877104, 80877102, 196608
MAX_STARTUP = 10_000


def _pg_error(message: str) -> bytes:
    fields = b"SFATAL\0VFATAL\0C28000\0M" + message.encode() + b"\0\0"
    return b"E" + struct.pack("!i", len(fields) + 4) + fields


async def postgres(reader, writer, open_upstream, *, user: str, database: str):
    while True:
        header = await reader.readexactly(8)
        length, code = struct.unpack("!ii", header)
        if not 8 <= length <= MAX_STARTUP:
            break
        if code in (SSL_REQUEST, GSSENC_REQUEST) and length == 8:
            writer.write(b"N")  # no encryption on the node's loopback; the client goes on in the clear
            await writer.drain()
            continue
        body = await reader.readexactly(length - 8)
        if code == CANCEL_REQUEST:  # carries a backend's id and secret: harmless, and clients need it
            upstream = await open_upstream()
            upstream[1].write(header + body)
            await upstream[1].drain()
            upstream[1].close()
            writer.close()
            return None
        if code != PROTOCOL_3:
            break
        parts = body.rstrip(b"\0").split(b"\0")
        params = dict(zip(parts[::2], parts[1::2]))
        asked_user = params.get(b"user", b"").decode(errors="replace")
        asked_db = params.get(b"database", params.get(b"user", b"")).decode(errors="replace")
        if asked_user != user or asked_db != database or b"replication" in params:
            writer.write(_pg_error(f"This connection is for role {user} to database {database} only."))
            await writer.drain()
            break
        upstream = await open_upstream()
        upstream[1].write(header + body)
        return upstream
    writer.close()
    return None


def _resp(*words: bytes) -> bytes:
    return b"*%d\r\n" % len(words) + b"".join(b"$%d\r\n%s\r\n" % (len(w), w) for w in words)


async def _command(reader) -> tuple[bytes, list[bytes]] | None:
    """One RESP command (an array of bulk strings): its raw bytes and its words; None at the end."""
    line = await reader.readline()
    if not line:
        return None
    if not line.startswith(b"*"):
        raise ValueError("inline commands are not relayed")
    count, raw, words = int(line[1:].strip()), line, []
    if not 0 < count <= 1_000_000:
        raise ValueError("bad array")
    for _ in range(count):
        size_line = await reader.readline()
        if not size_line.startswith(b"$"):
            raise ValueError("bad bulk string")
        size = int(size_line[1:].strip())
        if not 0 <= size <= 512 * 1024 * 1024:
            raise ValueError("bad size")
        data = await reader.readexactly(size + 2)
        raw += size_line + data
        words.append(data[:-2])
    return raw, words


async def redis(reader, writer, open_upstream, *, user: str, password: str):
    upstream = await open_upstream()
    upstream[1].write(_resp(b"AUTH", user.encode(), password.encode()))
    await upstream[1].drain()
    answer = await upstream[0].readline()
    if not answer.startswith(b"+OK"):
        writer.write(b"-ERR the add-on's login was refused upstream\r\n")
        writer.close()
        upstream[1].close()
        return None

    async def client_to_upstream():
        try:
            while (command := await _command(reader)) is not None:
                raw, words = command
                name = words[0].upper()
                if name == b"AUTH":
                    given = words[1:]
                    ok = given in ([password.encode()], [user.encode(), password.encode()])
                    raw = _resp(b"AUTH", user.encode(), password.encode() if ok else b"\0refused")
                elif name == b"HELLO":
                    break
                upstream[1].write(raw)
                await upstream[1].drain()
        except (ValueError, asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            upstream[1].close()
            writer.close()

    return upstream, client_to_upstream
