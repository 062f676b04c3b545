"""Settings of components (docs/resources.md): instance sizes, plans' instance limits, restarts."""
from .core import env

# Sizes an instance can have: its sandbox's limits (CPU share in cores, memory) and its price per hour in minor
# units of PRICES_CURRENCY.
INSTANCE_SIZES = {
    "starter": {"cpu": 0.25, "memory_mb": 256, "price_per_hour": 1},
    "standard": {"cpu": 0.5, "memory_mb": 512, "price_per_hour": 3},
    "pro": {"cpu": 1.0, "memory_mb": 2048, "price_per_hour": 10},
    "pro-plus": {"cpu": 2.0, "memory_mb": 4096, "price_per_hour": 20},
}
PRICES_CURRENCY = env("PRICES_CURRENCY", default="usd")
# What a workspace's plan allows (Workspace.plan); more component instances than this are refused (402).
PLANS = {
    "free": {"instances": 3},
    "pro": {"instances": 50},
    "enterprise": {"instances": 500},
}
# An instance that exits is started again after 1, 2, 4... seconds; this many failures in a row make it `crashed`.
INSTANCE_MAX_RESTARTS = env.int("INSTANCE_MAX_RESTARTS", default=5)
# A volume's size can be 1 to this many GB.
VOLUME_MAX_GB = env.int("VOLUME_MAX_GB", default=100)
