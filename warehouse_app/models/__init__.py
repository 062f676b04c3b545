"""One module per domain; each lists its models in `__all__`."""
from .directory import *  # noqa: F401,F403  facilities (OSM import)
from .commerce import *  # noqa: F401,F403  roles, quotes, bookings, movements, shortlist, support, allowances
