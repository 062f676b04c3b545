"""The project's resources: add-ons, components and volumes, buckets, dedicated databases, the tunnel, graduation
(docs/resources.md). `managed.py` gathers what they give builds and instances."""
