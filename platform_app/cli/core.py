"""What every command of `svc` shares: the global options and the state they fill, the `svc` group that turns every
failure into one printed error and an exit code (0 success, 1 a failed build or refused action, 2 usage or
authentication), and how a command finds its workspace and project."""
from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

import click
import httpx

from platform_app.cli import config
from platform_app.cli.client import Api, CliError


# State shared by every command ---------------------------------------------------------------------------------

@dataclass
class State:
    api_url: str | None = None
    token: str | None = None
    workspace: str | None = None
    json: bool = False
    yes: bool = False
    _api: Api | None = field(default=None, repr=False)
    _me: dict | None = field(default=None, repr=False)

    @property
    def base(self) -> str:
        return config.normalize_api(self.api_url or os.environ.get("SVC_API_URL") or config.current_api()
                                    or config.DEFAULT_API)

    @property
    def api(self) -> Api:
        if self._api is None:
            token = self.token or os.environ.get("SVC_TOKEN") or None
            if token is None and (entry := config.host_entry(self.base)):
                token = entry["token"]
            self._api = Api(self.base, token)
        return self._api

    def me(self) -> dict:
        if self._me is None:
            self._me = self.api.get("/v1/auth/me")
        return self._me

    # output
    def out(self, data, human=None) -> None:
        """`data` as JSON with --json; else `human` (a string, or a callable printing)."""
        if self.json:
            click.echo(json.dumps(data, indent=2, default=str))
        elif callable(human):
            human()
        elif human is not None:
            click.echo(human)

    def say(self, text: str) -> None:
        """A progress or hint line: on stderr, so stdout stays the command's result."""
        if not self.json:
            click.echo(text, err=True)


def _set(attr):
    def callback(ctx, param, value):
        state = ctx.ensure_object(State)
        if value not in (None, False):
            setattr(state, attr, value)
        return value
    return callback


def common(f=None, *, token: bool = True):
    """The global options, accepted after the command as well as before it (`svc tokens ls --json`)."""
    if f is None:
        return lambda g: common(g, token=token)
    f = click.option("--json", "json_", is_flag=True, expose_value=False, callback=_set("json"),
                     help="Machine-readable output.")(f)
    f = click.option("--workspace", "-w", expose_value=False, callback=_set("workspace"),
                     envvar="SVC_WORKSPACE", help="Workspace id or slug.")(f)
    if token:
        f = click.option("--token", expose_value=False, callback=_set("token"), help="API token (env SVC_TOKEN).")(f)
    f = click.option("--api", expose_value=False, callback=_set("api_url"), help="Platform URL (env SVC_API_URL).")(f)
    return f


def yes_option(f):
    return click.option("--yes", "-y", is_flag=True, expose_value=False, callback=_set("yes"),
                        help="Answer yes to every question (for scripts).")(f)


pass_state = click.make_pass_decorator(State, ensure=True)


def confirm(state: State, question: str) -> None:
    if state.yes:
        return
    if not click.confirm(question, default=False, err=True):
        raise CliError("Nothing done.", code="declined", hint="Pass --yes to answer yes in a script.")


# Errors: one line, never a traceback ---------------------------------------------------------------------------

def report(state: State | None, exc: CliError) -> None:
    if state is not None and state.json:
        click.echo(json.dumps(exc.as_json()), err=True)
        return
    click.secho(f"Error: {exc.message} ({exc.code})", fg="red", err=True)
    if exc.hint:
        click.echo(exc.hint, err=True)


class Group(click.Group):
    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except CliError as exc:
            report(ctx.find_object(State), exc)
            ctx.exit(exc.exit_code)
        except httpx.HTTPError as exc:
            report(ctx.find_object(State), CliError(f"HTTP error: {exc}", code="http_error"))
            ctx.exit(1)
        except OSError as exc:
            report(ctx.find_object(State), CliError(f"{exc.strerror or exc}: {exc.filename or ''}".rstrip(": "),
                                                    code="os_error"))
            ctx.exit(1)
        finally:
            state = ctx.find_object(State)
            if state is not None and state._api is not None:
                state.api.close()


@click.group(cls=Group, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@common
@click.version_option("1", prog_name="svc", message="%(prog)s %(version)s")
def cli():
    """svc: deploy folders to the platform, and manage tokens, projects, variables and domains."""


# Workspaces and projects ---------------------------------------------------------------------------------------

def resolve_workspace(state: State, link: dict | None = None) -> str:
    """--workspace, else the folder's link, else the token's own workspace, else the only one."""
    if state.workspace:
        return state.workspace
    if link:
        return link["orgId"]
    me = state.me()
    bound = (me.get("actingAs") or {}).get("orgId")
    if bound:
        return bound
    workspaces = me.get("workspaces") or []
    if len(workspaces) == 1:
        return workspaces[0]["id"]
    if not workspaces:
        raise CliError("You are a member of no workspace.", code="no_workspace")
    slugs = ", ".join(w["slug"] for w in workspaces)
    raise CliError(f"Several workspaces: name one with --workspace ({slugs}).", code="workspace_required",
                   exit_code=2)


@dataclass
class Target:
    org: str
    project: str
    name: str = ""

    @property
    def path(self) -> str:
        return f"/v1/orgs/{self.org}/projects/{self.project}"


def resolve_project(state: State, project: str | None, folder: Path | None = None) -> Target:
    """--project (id, slug or name), else the link of the folder (or the nearest above it)."""
    found = config.find_link(folder or Path.cwd())
    link = found[1] if found else None
    if project:
        org = resolve_workspace(state, link if link and not state.workspace else None)
        return Target(org, project, project)
    if link is None:
        raise CliError("This folder is not linked to a project.", code="not_linked", exit_code=2,
                       hint="Run `svc link` here, or name one with --project.")
    return Target(state.workspace or link["orgId"], link["projectId"], link.get("projectName", ""))


def project_option(f):
    return click.option("--project", "-p", help="Project id or slug (default: the folder's link).")(f)


def table(headers: list[str], rows: list[list]) -> None:
    """A table for people: rich's when stdout is a terminal, aligned text otherwise."""
    rows = [["" if v is None else str(v) for v in row] for row in rows]
    if sys.stdout.isatty():
        from rich.console import Console
        from rich.table import Table

        t = Table(*headers, box=None, header_style="bold")
        for row in rows:
            t.add_row(*row)
        Console().print(t)
        return
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    click.echo("  ".join(h.upper().ljust(w) for h, w in zip(headers, widths)).rstrip())
    for row in rows:
        click.echo("  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip())
