"""Add-ons: a PostgreSQL database or a Redis key space on a shared server, provisioned for a project
(docs/resources.md)."""


def addon_managed(*, project) -> list:
    """The managed variables (`Managed` items, services/resources/managed.py) the project's add-ons give it."""
    return []
