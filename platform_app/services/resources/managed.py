"""What a project's resources give its builds and instances: managed variables (connection details) and the
internal endpoints its sandboxes may reach.

Each feature answers `Managed` items for a project (add-ons, buckets, dedicated databases): a variable it would
like to set (`DATABASE_URL`), its value as code in the project's sandbox reaches it, where it comes from, and the
endpoint to open in the sandbox's allow-list for it. An endpoint is reached inside the sandbox at
127.0.0.1:<local port> (a port made from the resource's id), relayed by the node to the real address, and
checked there by a guard that speaks its protocol (platform_app/sandbox/guards.py): a PostgreSQL login only as
the resource's role to its database, a Redis connection only as its ACL user.

`managed_env(project)` merges them into the variables every build and instance gets (env_resolve adds them after
the project's own, which they override): the first resource asking for a name gets it, the next gets it prefixed
with its own name (`ANALYTICS_DATABASE_URL`). The items themselves are `variables.Managed`.
"""
import re

from platform_app.sandbox import Endpoint
from platform_app.services.resources.variables import Managed


def _sources(project) -> list[Managed]:
    from platform_app.services.resources import addons, buckets, dedicated_dbs

    return [*addons.addon_managed(project=project), *buckets.bucket_managed(project=project),
            *dedicated_dbs.database_managed(project=project)]


def prefixed_name(prefix: str, key: str) -> str:
    """The name a variable gets when another resource holds its preferred one: `CACHE_REDIS_URL`."""
    return re.sub(r"[^A-Z0-9]+", "_", f"{prefix}_{key}".upper()).strip("_")


def managed_items(*, project) -> list[tuple[str, Managed]]:
    """(variable name, item) of every managed variable of the project, names made unique."""
    taken, out = set(), []
    for item in _sources(project):
        name = item.key
        if name in taken:
            name = prefixed_name(item.prefix, item.key)
        if name in taken:
            continue  # two resources of one name: the first keeps it
        taken.add(name)
        out.append((name, item))
    return out


def managed_env(*, project) -> dict[str, str]:
    return {name: item.value for name, item in managed_items(project=project)}


def managed_endpoints(*, project) -> tuple[Endpoint, ...]:
    """The project's endpoints, each once (a resource with several variables has one endpoint)."""
    seen = {}
    for _, item in managed_items(project=project):
        if item.endpoint is not None:
            seen.setdefault(item.endpoint.local_port, item.endpoint)
    return tuple(seen.values())
