"""Settings of addons (docs/resources.md)."""
from .core import env  # noqa: F401

ADDONS_BEAT: dict = {}
