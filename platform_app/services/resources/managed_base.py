"""What a resource's managed variable is (`Managed`) and where its endpoint appears in a sandbox (`local_port`):
the part of managed.py the features build their items with. It imports no feature, so a feature can import it
without a circle (managed.py imports every feature to gather their items)."""
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
