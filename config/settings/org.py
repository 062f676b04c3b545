"""Settings of the org area."""
from .core import env  # noqa: F401

ORG_BEAT: dict = {}
