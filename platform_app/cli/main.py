"""The commands of `svc` (docs/cli.md). Click parses and prints help and shell completion; each command is a few
API calls through `client.Api`. Every failure ends as one printed error (message and code; the scope for a 403)
and an exit code: 0 success, 1 a failed build or refused action, 2 usage or authentication."""
import sys

import click

from platform_app.cli import auth, deploys, project_settings  # noqa: F401 - each registers its commands on `cli`
from platform_app.cli.core import cli

__all__ = ["cli", "main"]


def main() -> None:
    try:
        cli.main(prog_name="svc")
    except KeyboardInterrupt:
        click.echo("Interrupted.", err=True)
        sys.exit(130)
