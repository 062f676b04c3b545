"""The ACL of a Redis add-on's user (docs/resources.md): no command but an explicit list of those that act on
keys named in their arguments (checked against `~<prefix>:*`) or on the connection itself, and pub/sub on
`&<prefix>:*` channels. Left out: every keyless command that lists, counts, drops or moves other tenants'
keys (KEYS, SCAN, RANDOMKEY, DBSIZE, FLUSHDB, FLUSHALL, INFO, SELECT, MOVE, SWAPDB, COPY ... DB), shared server
state (FUNCTION, FCALL, SCRIPT FLUSH/KILL, PUBSUB, CONFIG, CLIENT but its own name, ACL but WHOAMI), and the
commands whose patterns reach keys their arguments do not name (SORT BY/GET, RESTORE's payloads)."""

KEY_COMMANDS = """
    del unlink exists type ttl pttl expire pexpire expireat pexpireat expiretime pexpiretime persist touch rename
    renamenx object
    get set setnx setex psetex mget mset msetnx getset getdel getex append strlen incr incrby incrbyfloat decr
    decrby getrange setrange substr lcs
    setbit getbit bitcount bitpos bitop bitfield bitfield_ro pfadd pfcount pfmerge
    hset hsetnx hget hmset hmget hgetall hdel hexists hincrby hincrbyfloat hkeys hvals hlen hstrlen hscan
    hrandfield hexpire hpexpire hexpireat hpexpireat httl hpttl hexpiretime hpexpiretime hpersist hgetdel hgetex
    hsetex
    lpush rpush lpushx rpushx lpop rpop llen lrange lindex lset linsert lrem ltrim lpos lmove blmove rpoplpush
    brpoplpush blpop brpop lmpop blmpop
    sadd srem smembers sismember smismember scard spop srandmember smove sinter sintercard sinterstore sunion
    sunionstore sdiff sdiffstore sscan
    zadd zrem zcard zcount zincrby zscore zmscore zrank zrevrank zrange zrangestore zrevrange zrangebyscore
    zrevrangebyscore zrangebylex zrevrangebylex zlexcount zremrangebyrank zremrangebyscore zremrangebylex zpopmin
    zpopmax bzpopmin bzpopmax zmpop bzmpop zunion zunionstore zinter zinterstore zintercard zdiff zdiffstore
    zrandmember zscan
    geoadd geodist geohash geopos georadius georadius_ro georadiusbymember georadiusbymember_ro geosearch
    geosearchstore
    xadd xrange xrevrange xlen xdel xtrim xread xreadgroup xgroup xack xclaim xautoclaim xpending xinfo xsetid
    subscribe unsubscribe psubscribe punsubscribe publish ssubscribe sunsubscribe spublish
    multi exec discard watch unwatch
    eval evalsha eval_ro evalsha_ro
    ping echo time command
""".split()
# Scripts may be cached (EVALSHA's fallback loads them), not flushed or killed for everyone; a connection may
# name itself. An older server lacks some: each is added on its own, and one it does not know is skipped.
SUBCOMMANDS = ["acl|whoami", "script|load", "script|exists", "client|setname", "client|getname", "client|setinfo",
               "client|id", "memory|usage"]


def redis_acl_rules(*, password: str, prefix: str, known: set[str]) -> list[str]:
    """`ACL SETUSER <user> ...` arguments: everything reset first, then the allow-list (the commands this server
    knows: `known`, lower case), SUBCOMMANDS aside."""
    allowed = [f"+{name}" for name in KEY_COMMANDS if name in known]
    return ["reset", "resetkeys", "resetchannels", "-@all", *allowed, "on", f">{password}", f"~{prefix}:*",
            f"&{prefix}:*"]


def redis_known_commands(client) -> set[str]:
    """The command names the server knows (an older server lacks some of the list's)."""
    return {(n.decode() if isinstance(n, bytes) else str(n)).lower() for n in client.command()}
