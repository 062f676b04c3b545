"""Where strangers' code runs: build commands and start commands, behind one small runner interface.

`runner_get(name)` answers a runner (`bubblewrap`, or `none` for a machine without one, which says so);
`runner.run(command, workdir=..., env=..., limits=..., network=...)` starts the command and answers a
`Sandboxed` process: its output, its exit, the limit it broke, a connection to the port it listens on.

The package imports nothing of Django's settings: builders and agents run it on machines that hold no
platform secret (platform_app/nodes/). docs/isolation.md says what each promise is and how it is kept.
"""
from platform_app.sandbox.base import Endpoint, ImageRoot, Limits, Network, Runner, Sandboxed, SandboxUnavailable
from platform_app.sandbox.runners import runner_get

__all__ = ("Endpoint", "ImageRoot", "Limits", "Network", "Runner", "Sandboxed", "SandboxUnavailable", "runner_get")
