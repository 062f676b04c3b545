"""The tunnel: a port of a developer's machine served at `<project>-tunnel.<DEPLOY_DOMAIN>` (docs/tunnel.md)."""
from .core import env

# Where `manage.py tunnel` opens its WebSocket; config/asgi.py routes WebSocket scopes by path (WEBSOCKET_ROUTES,
# assembled in base.py like the beat schedule).
TUNNEL_CONNECT_PATH = "/v1/tunnel/connect"
TUNNELS_WEBSOCKETS = {TUNNEL_CONNECT_PATH: "platform_app.api.resources.tunnel.tunnel_connect"}

# Largest request body the edge forwards and largest answer the client may send back, in bytes (413 / 502 past
# it). Follows DATA_UPLOAD_MAX_MEMORY_SIZE unless set. Both travel whole in one WebSocket message, so the bound
# stays under uvicorn's 16 MiB message limit (ws_max_size) with room for the headers.
TUNNEL_MAX_BODY_BYTES = min(env.int("TUNNEL_MAX_BODY_BYTES",
                                    default=env.int("DATA_UPLOAD_MAX_MEMORY_SIZE", default=1024 * 1024)),
                            15 * 1024 * 1024)
# The edge answers 502 when the client has not answered a request within this long.
TUNNEL_ANSWER_TIMEOUT_SECONDS = env.float("TUNNEL_ANSWER_TIMEOUT_SECONDS", default=30.0)
# Without Redis: a request no process holding the tunnel picked up within this long is 503 (the holder died).
TUNNEL_CLAIM_TIMEOUT_SECONDS = env.float("TUNNEL_CLAIM_TIMEOUT_SECONDS", default=3.0)
# Without Redis the holder looks for requests, and the edge for answers, this often (database relay).
TUNNEL_POLL_SECONDS = env.float("TUNNEL_POLL_SECONDS", default=0.05)
# The process holding a connection writes `lastSeenAt` and the byte counters this often (the throttle of those
# writes) and notices a stop or a new start on the same beat; a connection not seen for TUNNEL_CONNECTION_TTL_SECONDS
# counts as gone (its process died).
TUNNEL_HEARTBEAT_SECONDS = env.float("TUNNEL_HEARTBEAT_SECONDS", default=2.0)
TUNNEL_CONNECTION_TTL_SECONDS = env.float("TUNNEL_CONNECTION_TTL_SECONDS", default=10.0)

TUNNELS_BEAT = {
    # connections of processes that died, relay rows of edge processes that died
    "tunnels-prune": {"task": "platform_app.tasks.tunnels.tunnels_prune", "schedule": 60.0},
}
