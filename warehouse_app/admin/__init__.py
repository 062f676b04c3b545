"""Admin registrations, one module per area."""
from . import commerce, directory  # noqa: F401
