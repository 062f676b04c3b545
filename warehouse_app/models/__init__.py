"""One module per domain; each lists its models in `__all__`."""
from .directory import *  # noqa: F401,F403
