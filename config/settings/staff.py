"""Settings of the staff area."""
from .core import env  # noqa: F401

STAFF_BEAT: dict = {}
