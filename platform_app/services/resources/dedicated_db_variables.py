"""The names of the managed variables a project's dedicated databases give it (read by the API and the
dashboard). Kept apart from dedicated_dbs.py, which managed.py imports, since this reads managed.py's naming."""
from platform_app.services.resources.dedicated_dbs import VARIABLES
from platform_app.services.resources.managed import managed_items, prefixed_name


def database_env_names(*, project) -> dict[str, list[str]]:
    """Database id → the variable names it gives the project now (its ready or restoring databases)."""
    names: dict[str, list[str]] = {}
    for name, item in managed_items(project=project):
        if item.source.startswith("dedicated-db:"):
            names.setdefault(item.source.split(":", 1)[1], []).append(name)
    return names


def database_env_names_planned(*, project, database) -> list[str]:
    """The names a database not ready yet will get once it is (managed.py: a name another resource holds is
    prefixed with the database's name)."""
    taken = {name for name, _ in managed_items(project=project)}
    return [key if key not in taken else prefixed_name(database.name, key) for key in VARIABLES]
