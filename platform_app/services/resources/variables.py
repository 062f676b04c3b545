"""What one resource gives a project's builds and instances: a managed variable (and the sandbox endpoint that
makes it reachable). Each feature makes these; managed.py gathers them."""
import hashlib
from dataclasses import dataclass

from platform_app.sandbox import Endpoint

LOCAL_PORTS = (20000, 40000)  # where endpoints appear on a sandbox's own loopback


@dataclass(frozen=True)
class Managed:
    key: str                      # the variable's preferred name
    value: str                    # as the project's sandbox reaches it
    source: str                   # "addon:add_..." / "bucket:bkt_..." / "dedicated-db:ddb_...": shown as managed
    prefix: str = ""              # the name to prefix `key` with when another resource holds it (upper case)
    endpoint: Endpoint | None = None


def local_port(resource_id: str) -> int:
    """The loopback port a resource's endpoint gets inside a sandbox: stable, made from its id."""
    low, high = LOCAL_PORTS
    return low + int(hashlib.sha256(resource_id.encode()).hexdigest()[:8], 16) % (high - low)
