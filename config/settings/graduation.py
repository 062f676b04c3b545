"""Settings of graduation (docs/resources.md)."""
from .core import env  # noqa: F401

GRADUATION_BEAT: dict = {}
