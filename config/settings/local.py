"""Development: what `make run` uses."""
from .base import *  # noqa: F401,F403
from .base import env

DEBUG = env.bool("DJANGO_DEBUG", default=True)
# Plain-http Git servers are common in development; production refuses them.
OUTBOUND_ALLOW_HTTP = env.bool("OUTBOUND_ALLOW_HTTP", default=True)

# WhiteNoise serves static files straight from the apps' folders, re-scanned per request: no collectstatic.
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG
# Without bubblewrap (a laptop), builds and instances run unsandboxed, and every build log says so.
SANDBOX_ALLOW_NONE = env.bool("SANDBOX_ALLOW_NONE", default=True)
