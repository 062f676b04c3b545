"""Dedicated databases: a PostgreSQL database of the project's own, with backups, restore and branches
(docs/resources.md)."""


def database_managed(*, project) -> list:
    """The managed variables (`Managed` items, services/resources/managed.py) the project's databases give it."""
    return []
