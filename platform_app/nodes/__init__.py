"""Nodes: the processes that run strangers' code (builds, instances) on machines that hold no platform secret.

`python -m platform_app.nodes --server URL --join TOKEN [--build N] [--no-run]` starts one; it reads neither the
platform's settings nor its database (docs/isolation.md). `manage.py agent` and `manage.py builder` start the
same for `make run`.
"""
