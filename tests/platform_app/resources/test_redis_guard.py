"""A Redis add-on on a server whose `default` user has no password gives a project its own keys and nothing else:
the node's guard keeps each connection its add-on's user on its database (RESET, AUTH and HELLO as someone
else, SELECT, ACL... refused), the user's ACL refuses the keyless commands that reach other tenants' data, and a
command larger than SANDBOX_GUARD_MAX_COMMAND_BYTES closes the connection before the node buffers it."""
import json
import textwrap

import pytest
import redis

from platform_app.models import Addon
from platform_app.services.env.crypto import decrypt
from tests.platform_app.resources.test_addons import _add
from tests.platform_app.sandbox.conftest import deploy, log_text

# One connection, one command at a time (and one pipelined burst): `REPLY <label> -> <reply>` lines in the log.
PROBE = textwrap.dedent('''\
    import os, socket
    from urllib.parse import urlsplit, unquote

    url = urlsplit(os.environ["REDIS_URL"])
    prefix = os.environ["REDIS_KEY_PREFIX"]

    def resp(*words):
        words = [w if isinstance(w, bytes) else str(w).encode() for w in words]
        return b"*%d\\r\\n" % len(words) + b"".join(b"$%d\\r\\n%s\\r\\n" % (len(w), w) for w in words)

    def reply(f):
        line = f.readline()
        if not line:
            raise ConnectionError("closed")
        kind, rest = line[:1], line[1:-2]
        if kind in b"$=!":
            size = int(rest)
            return None if size < 0 else f.read(size + 2)[:-2].decode(errors="replace")
        if kind in b"*~>%|":
            count = int(rest) * (2 if kind in b"%|" else 1)
            return [reply(f) for _ in range(max(count, 0))]
        return (kind + rest).decode(errors="replace") if kind == b"-" else rest.decode(errors="replace")

    sock = socket.create_connection((url.hostname, url.port), 5)
    f = sock.makefile("rb")

    def ask(label, *words):
        try:
            sock.sendall(resp(*words))
            answer = reply(f)
        except Exception as exc:
            answer = "closed: " + type(exc).__name__
        print("REPLY", label, "->", str(answer)[:300].replace(chr(10), " "), flush=True)

    ask("login", "AUTH", unquote(url.username), unquote(url.password))
    ask("set", "SET", prefix + "k", "kept")
    ask("reset", "RESET")
    ask("whoami after reset", "ACL", "WHOAMI")
    ask("auth default", "AUTH", "default", "")
    ask("auth password only", "AUTH", "")
    ask("hello auth default", "HELLO", "3", "AUTH", "default", "")
    ask("select", "SELECT", "1")
    ask("keys", "KEYS", "*")
    ask("scan", "SCAN", "0")
    ask("acl list", "ACL", "LIST")
    ask("client list", "CLIENT", "LIST")
    ask("other prefix", "GET", "other:secret")
    ask("whoami", "ACL", "WHOAMI")
    ask("get", "GET", prefix + "k")
    try:
        sock.sendall(resp("SET", prefix + "p", "1") + resp("RESET") + resp("GET", prefix + "p"))
        print("REPLY pipelined ->", [reply(f) for _ in range(3)], flush=True)
    except Exception as exc:
        print("REPLY pipelined -> closed:", type(exc).__name__, flush=True)
    ask("hello 3", "HELLO", "3")
    ask("get after hello", "GET", prefix + "k")
    ''')

# An unfinished bulk string far larger than the guard's bound: how much went in before the connection closed.
HUGE = textwrap.dedent('''\
    import os, socket
    from urllib.parse import urlsplit, unquote

    url = urlsplit(os.environ["REDIS_URL"])
    key = (os.environ["REDIS_KEY_PREFIX"] + "big").encode()
    sock = socket.create_connection((url.hostname, url.port), 5)
    user, password = unquote(url.username).encode(), unquote(url.password).encode()
    login = b"*3\\r\\n$4\\r\\nAUTH\\r\\n$%d\\r\\n%s\\r\\n" % (len(user), user)
    sock.sendall(login + b"$%d\\r\\n%s\\r\\n" % (len(password), password))
    print("REPLY login ->", sock.recv(100), flush=True)
    sock.sendall(b"*3\\r\\n$3\\r\\nSET\\r\\n$%d\\r\\n%s\\r\\n$500000000\\r\\n" % (len(key), key))
    sent, chunk = 0, b"x" * (1 << 20)
    try:
        while sent < (96 << 20):
            sock.sendall(chunk)
            sent += len(chunk)
        print("REPLY huge -> open after", sent >> 20, "MiB", flush=True)
    except OSError as exc:
        print("REPLY huge -> closed after", sent >> 20, "MiB", type(exc).__name__, flush=True)
    ''')


def _replies(text: str) -> dict:
    return {line[6:].partition(" -> ")[0]: line.partition(" -> ")[2]
            for line in text.splitlines() if line.startswith("REPLY ") and " -> " in line}


def _build(client, make_project, name, script, capture):
    project = make_project(name, {"probe.py": script, "index.html": "x"}, output_directory=".",
                           build_command="python3 probe.py")
    addon = _add(client, project, "redis")
    assert addon["status"] == "ready", addon
    deployment = deploy(client, project, capture)
    return Addon.objects.get(pk=addon["id"]), log_text(deployment)


@pytest.mark.django_db(transaction=True)
def test_through_the_guard_a_build_keeps_its_own_user_and_keys_on_an_open_server(sandbox, alice, as_user,
                                                                                 make_project, open_redis_server):
    from django.test.testcases import TestCase

    open_redis_server.set("other:secret", "another tenant's")
    addon, log = _build(as_user(alice), make_project, "cache", PROBE, TestCase.captureOnCommitCallbacks)
    user = json.loads(decrypt(addon.credentials_encrypted))["user"]
    got = _replies(log)
    assert got["login"] == "OK" and got["set"] == "OK" and got["get"] == "kept", log
    for label in ("reset", "auth default", "auth password only", "hello auth default", "select", "keys", "scan",
                  "acl list", "client list", "other prefix"):
        assert got[label].startswith("-"), (label, got[label])
    assert "another tenant's" not in log and "default" not in got["acl list"]
    assert got["whoami after reset"] == got["whoami"] == user
    pipelined = got["pipelined"]  # the refusal answered in its turn, between the replies around it
    assert pipelined.startswith("['OK', \"-ERR") and "refused" in pipelined and pipelined.endswith("'1']"), pipelined
    assert "proto" in got["hello 3"] and got["get after hello"] == "kept"  # HELLO without credentials is relayed
    assert open_redis_server.get("other:secret") == b"another tenant's"
    assert open_redis_server.dbsize() == 3  # its two keys and the other tenant's, all on database 0


@pytest.mark.django_db
def test_the_addon_users_acl_refuses_what_reaches_other_tenants_without_the_guard(alice_client, make_project,
                                                                                  open_redis_server):
    """A node whose guard is bypassed: the add-on's credentials straight to the server."""
    open_redis_server.set("other:secret", "another tenant's")
    open_redis_server.execute_command("FUNCTION", "LOAD",
                                      "#!lua name=otherlib\nredis.register_function('other_fn', "
                                      "function(keys, args) return redis.call('GET', 'other:secret') end)")
    body = _add(alice_client, make_project("direct", {"index.html": "x"}), "redis")
    assert body["status"] == "ready", body
    c = json.loads(decrypt(Addon.objects.get(pk=body["id"]).credentials_encrypted))
    tenant = redis.Redis(port=open_redis_server.connection_pool.connection_kwargs["port"], username=c["user"],
                         password=c["password"], decode_responses=True)
    key = c["prefix"] + "k"
    assert tenant.set(key, "v") and tenant.get(key) == "v"
    assert tenant.hset(c["prefix"] + "h", "f", "1") == 1 and tenant.lpush(c["prefix"] + "l", "a") == 1
    assert tenant.zadd(c["prefix"] + "z", {"a": 1}) == 1 and tenant.xadd(c["prefix"] + "s", {"f": "v"})
    assert tenant.expire(key, 60) and tenant.publish(c["prefix"] + "news", "hi") == 0
    assert tenant.eval("return redis.call('GET', KEYS[1])", 1, key) == "v"
    pipe = tenant.pipeline(transaction=True)
    pipe.incr(c["prefix"] + "n").incr(c["prefix"] + "n")
    assert pipe.execute() == [1, 2]
    refused = [("GET", "other:secret"), ("KEYS", "*"), ("SCAN", "0"), ("RANDOMKEY",), ("DBSIZE",), ("FLUSHDB",),
               ("FLUSHALL",), ("FUNCTION", "LIST"), ("FUNCTION", "FLUSH"), ("FCALL", "other_fn", "0"),
               ("SCRIPT", "FLUSH"), ("SELECT", "1"), ("PUBSUB", "CHANNELS"), ("ACL", "LIST"), ("CLIENT", "LIST"),
               ("INFO",), ("MOVE", key, "1"), ("SWAPDB", "0", "1"), ("COPY", key, c["prefix"] + "c", "DB", "1"),
               ("EVAL", "return redis.call('GET', 'other:secret')", "0"), ("PUBLISH", "other:news", "x"),
               ("SORT", c["prefix"] + "l", "BY", "other:*")]
    for command in refused:
        with pytest.raises(redis.ResponseError) as error:
            tenant.execute_command(*command)
        assert "permission" in str(error.value) or "can't access" in str(error.value), (command, error.value)
    assert tenant.acl_whoami() == c["user"]
    assert open_redis_server.get("other:secret") == b"another tenant's" and open_redis_server.dbsize() >= 1


@pytest.mark.django_db(transaction=True)
def test_a_command_past_the_guards_bound_closes_the_connection_before_it_is_buffered(sandbox, alice, as_user,
                                                                                     make_project,
                                                                                     open_redis_server):
    from django.test.testcases import TestCase

    sandbox.SANDBOX_GUARD_MAX_COMMAND_BYTES = 1 << 20
    addon, log = _build(as_user(alice), make_project, "huge", HUGE, TestCase.captureOnCommitCallbacks)
    got = _replies(log)
    assert got["login"] == "b'+OK\\r\\n'", log
    assert got["huge"].startswith("closed after"), got["huge"]
    assert int(got["huge"].split()[2]) < 48, got["huge"]  # socket buffers, not the 96 MiB it tried
    assert open_redis_server.dbsize() == 0


@pytest.mark.django_db
def test_addons_redis_rules_gives_an_existing_user_todays_acl(alice_client, make_project, open_redis_server):
    from django.core.management import call_command

    body = _add(alice_client, make_project("older", {"index.html": "x"}), "redis")
    c = json.loads(decrypt(Addon.objects.get(pk=body["id"]).credentials_encrypted))
    open_redis_server.execute_command("ACL", "SETUSER", c["user"], "reset", "on", f">{c['password']}",
                                      f"~{c['prefix']}*", "+@all", "-@dangerous", "-@admin")  # an older user's
    tenant = redis.Redis(port=open_redis_server.connection_pool.connection_kwargs["port"], username=c["user"],
                         password=c["password"])
    assert tenant.scan(0) == (0, [])
    call_command("addons_redis_rules")
    with pytest.raises(redis.exceptions.NoPermissionError):
        tenant.scan(0)
    assert tenant.set(c["prefix"] + "k", "v") and tenant.get(c["prefix"] + "k") == b"v"
