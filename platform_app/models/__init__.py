from .identity import *  # noqa: F401,F403
from .workspaces import *  # noqa: F401,F403
from .tokens import *  # noqa: F401,F403
from .audit import *  # noqa: F401,F403
