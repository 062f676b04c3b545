"""The edge's firewall and web analytics."""
from .core import env  # noqa: F401

EDGE_BEAT: dict = {}
