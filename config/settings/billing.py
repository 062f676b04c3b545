"""Settings of the billing area."""
from .core import env  # noqa: F401

BILLING_BEAT: dict = {}
