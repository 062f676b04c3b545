"""Buckets: S3-compatible object storage for a project (docs/resources.md)."""


def bucket_managed(*, project) -> list:
    """The managed variables (`Managed` items, services/resources/managed.py) the project's buckets give it."""
    return []
