"""Settings of dedicated databases (docs/resources.md)."""
from .core import env  # noqa: F401

DEDICATED_DBS_BEAT: dict = {}
