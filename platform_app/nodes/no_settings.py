"""The settings module of a node process: there are none. A node runs strangers' code and holds no platform
secret, so reading the platform's settings there is a bug, and this makes it loud."""
from django.core.exceptions import ImproperlyConfigured

raise ImproperlyConfigured("A node (python -m platform_app.nodes) runs without the platform's settings.")
