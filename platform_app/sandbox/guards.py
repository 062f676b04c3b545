"""Protocol guards on a sandbox's endpoints: the node speaks just enough of a service's protocol to let a
project reach its own database or key space and nothing else on the same server.

- `postgres`: the client's startup message must name the endpoint's role and database (SSL and GSSAPI
  encryption requests are declined: the relay is on the node's loopback, the client's on its own); anything else
  gets PostgreSQL's own `28000` error and the connection is closed before the server sees a byte. A server
  that trusts local logins cannot be asked for another role through it.
- `redis`: the node logs in upstream as the endpoint's ACL user before relaying; a client `AUTH` with that user
  and password is passed on (and answered `+OK` in order), any other `AUTH` is rewritten to fail as that user;
  `HELLO` is relayed only without credentials or with the add-on's own; `RESET` (which makes the connection the
  server's `default` user and which no ACL can refuse), `SELECT`, `MOVE`, `MIGRATE`, `SWAPDB`, `ACL` but `ACL
  WHOAMI`, and `CLIENT` but its SETNAME/GETNAME/SETINFO/ID are replaced by a command the server answers with an
  error, in order. The user's ACL keeps it to its keys; this keeps it that user on database 0. A command is read
  whole before it is relayed, so one longer than `max_command_bytes` closes the connection when its sizes say
  so, before its bytes are read.

A guard answers the upstream (reader, writer) to bridge, or None when it refused (and closed the client).
"""
import asyncio
import struct

SSL_REQUEST, GSSENC_REQUEST, CANCEL_REQUEST, PROTOCOL_3 = 80877103, 80877104, 80877102, 196608
MAX_STARTUP = 10_000
MAX_COMMAND = 4 * 1024 * 1024  # SANDBOX_GUARD_MAX_COMMAND_BYTES's default


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


class CommandTooLarge(ValueError):
    pass


async def _command(reader, max_bytes: int) -> tuple[bytes, list[bytes]] | None:
    """One RESP command (an array of bulk strings): its raw bytes and its words; None at the end. A command of
    more than `max_bytes` raises CommandTooLarge as soon as its declared sizes say so, before its bytes are read."""
    line = await reader.readline()
    if not line:
        return None
    if not line.startswith(b"*"):
        raise ValueError("inline commands are not relayed")
    count, raw, words = int(line[1:].strip()), bytearray(line), []
    if not 0 < count <= max_bytes // 6:  # the smallest bulk string, `$0\r\n\r\n`, is 6 bytes
        raise CommandTooLarge("bad array")
    for _ in range(count):
        size_line = await reader.readline()
        if not size_line.startswith(b"$"):
            raise ValueError("bad bulk string")
        size = int(size_line[1:].strip())
        if size < 0:
            raise ValueError("bad size")
        if len(raw) + len(size_line) + size + 2 > max_bytes:
            raise CommandTooLarge(f"command over {max_bytes} bytes")
        data = await reader.readexactly(size + 2)
        if not data.endswith(b"\r\n"):
            raise ValueError("bad bulk string")
        raw += size_line + data
        words.append(data[:-2])
    return bytes(raw), words


# What would make the connection someone else, or show it another database or the server's users and clients.
REFUSED = {b"RESET", b"SELECT", b"MOVE", b"MIGRATE", b"SWAPDB", b"ACL", b"CLIENT"}
# Harmless subcommands of those (client libraries send CLIENT SETINFO / SETNAME on connect).
ALLOWED_SUBCOMMANDS = {(b"ACL", b"WHOAMI"), (b"CLIENT", b"SETNAME"), (b"CLIENT", b"GETNAME"),
                       (b"CLIENT", b"SETINFO"), (b"CLIENT", b"ID")}


def _refusal(name: bytes) -> bytes:
    """A command the server answers with an error in its turn (no command has a space in its name), so the
    replies of a pipelined client stay in order."""
    return _resp(b"%s (refused on this connection)" % name[:64])


def redis_guarded(words: list[bytes], raw: bytes, *, user: bytes, password: bytes) -> bytes:
    """What to send upstream for the client's command `words` (`raw`): itself, or a command that fails."""
    name = words[0].upper()
    if name == b"AUTH":  # as the add-on's user (passed on), or made to fail as that user
        ok = words[1:] in ([password], [user, password])
        return _resp(b"AUTH", user, password if ok else b"\0refused")
    if name == b"HELLO":  # the protocol switch is relayed; credentials only when they are the add-on's own
        logins = [words[i + 1:i + 3] for i, word in enumerate(words) if i >= 2 and word.upper() == b"AUTH"]
        return raw if all(login == [user, password] for login in logins) else _refusal(name)
    if name in REFUSED and (name, words[1].upper() if len(words) > 1 else b"") not in ALLOWED_SUBCOMMANDS:
        return _refusal(name)
    return raw


async def redis(reader, writer, open_upstream, *, user: str, password: str, max_command_bytes: int = MAX_COMMAND):
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
            while (command := await _command(reader, max_command_bytes)) is not None:
                raw, words = command
                upstream[1].write(redis_guarded(words, raw, user=user.encode(), password=password.encode()))
                await upstream[1].drain()
        except (ValueError, asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            upstream[1].close()
            writer.close()

    return upstream, client_to_upstream
