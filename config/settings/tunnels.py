"""Settings of tunnels (docs/resources.md)."""
from .core import env  # noqa: F401

TUNNELS_BEAT: dict = {}
