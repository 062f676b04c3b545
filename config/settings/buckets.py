"""Settings of buckets (docs/resources.md)."""
from .core import env  # noqa: F401

BUCKETS_BEAT: dict = {}
