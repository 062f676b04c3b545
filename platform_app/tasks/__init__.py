"""Celery entry points, one module per area."""
from . import agents  # noqa: F401
from . import automation  # noqa: F401
from . import deployments  # noqa: F401
from . import domains  # noqa: F401
from . import edge  # noqa: F401
from . import identity  # noqa: F401
from . import tunnels  # noqa: F401
