"""`svc`, the platform's command-line client (docs/cli.md).

It speaks to the platform over its public `/v1` API only, like the nodes (platform_app/nodes): it imports nothing
of Django and none of the project's other modules, so it installs with its own few dependencies (pyproject.toml).
"""
