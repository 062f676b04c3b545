"""Projects, linking a folder, deploying it with its build log streamed live, logs, rollback and open."""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import click
import httpx

from platform_app.cli import config
from platform_app.cli.client import ApiError, CliError, follow_events, parse_sse
from platform_app.cli.core import (Group, State, Target, cli, common, confirm, pass_state, project_option,
                                   resolve_project, resolve_workspace, table, yes_option)
from platform_app.cli.pack import chunks, pack


# projects and link ---------------------------------------------------------------------------------------------

@cli.group(cls=Group)
def projects():
    """Projects of a workspace."""


@projects.command("ls")
@common
@pass_state
def projects_ls(state: State):
    """The workspace's projects."""
    found = config.find_link(Path.cwd())
    org = resolve_workspace(state, found[1] if found else None)
    items = state.api.pages(f"/v1/orgs/{org}/projects")
    state.out(items, lambda: table(["name", "slug", "source", "url", "id"],
                                   [[p["name"], p["slug"], p.get("source"), p.get("url"), p["id"]] for p in items]))


def _pick_workspace(state: State) -> str:
    if state.workspace:
        return state.workspace
    me = state.me()
    bound = (me.get("actingAs") or {}).get("orgId")
    workspaces = me.get("workspaces") or []
    if bound or len(workspaces) == 1:
        return bound or workspaces[0]["id"]
    if not workspaces:
        raise CliError("You are a member of no workspace.", code="no_workspace")
    if state.yes or not sys.stdin.isatty():
        return resolve_workspace(state)  # explains --workspace
    for i, w in enumerate(workspaces, 1):
        click.echo(f"  {i}. {w['slug']} ({w['name']}, {w['role']})", err=True)
    choice = click.prompt("Workspace", type=click.IntRange(1, len(workspaces)), err=True)
    return workspaces[choice - 1]["id"]


def link_folder(state: State, folder: Path, project_name: str | None) -> tuple[Path, dict]:
    org = _pick_workspace(state)
    name = project_name or folder.resolve().name
    wanted = name.lower()
    existing = next((p for p in state.api.pages(f"/v1/orgs/{org}/projects")
                     if wanted in (p["id"].lower(), p["slug"].lower(), p["name"].lower())), None)
    if existing is None:
        confirm(state, f"No project {name!r} in this workspace. Create it (uploaded sources)?")
        existing = state.api.post(f"/v1/orgs/{org}/projects", json={"name": name, "source": "upload"})
        state.say(f"Created project {existing['name']} ({existing['id']}).")
    data = {"api": state.base, "orgId": existing.get("orgId") or org, "projectId": existing["id"],
            "projectName": existing["name"]}
    config.write_link(folder, data)
    return folder, data


@cli.command()
@common
@yes_option
@click.option("--project", "-p", "project_name", help="Project name, slug or id (default: the folder's name).")
@click.option("--dir", "folder", type=click.Path(file_okay=False, path_type=Path), default=".",
              help="The folder to link (default: this one).")
@pass_state
def link(state: State, project_name: str | None, folder: Path):
    """Tie this folder to a workspace and project (.svc/project.json), creating the project if needed."""
    folder.mkdir(parents=True, exist_ok=True)
    _, data = link_folder(state, folder, project_name)
    state.out(data, f"Linked {folder.resolve()} to {data['projectName']} ({data['projectId']}).")


# deploy and logs -----------------------------------------------------------------------------------------------

class LogPrinter:
    """Build lines as they come: above a spinner with the elapsed time on a terminal, plain lines otherwise."""

    def __init__(self, state: State, title: str):
        self.state, self.title, self.started = state, title, time.monotonic()
        self.tail: list[str] = []
        self.live = None
        self.console = None
        if not state.json and sys.stdout.isatty():
            from rich.console import Console

            self.console = Console()

    def __enter__(self):
        if self.console is not None:
            self.live = self.console.status(self._status_text())
            self.live.__enter__()
        return self

    def _status_text(self) -> str:
        return f"{self.title} [dim]{time.monotonic() - self.started:.0f}s[/dim]"

    def line(self, text: str) -> None:
        self.tail = (self.tail + [text])[-40:]
        if self.state.json:
            return
        if self.console is not None:
            from rich.markup import escape

            self.console.print(escape(text), highlight=False)
            self.live.update(self._status_text())
        else:
            click.echo(text)

    def status(self, title: str) -> None:
        self.title = title
        if self.live is not None:
            self.live.update(self._status_text())

    def __exit__(self, *exc):
        if self.live is not None:
            self.live.__exit__(*exc)


def stream_build(state: State, org: str, deployment_id: str, *, printer: LogPrinter) -> str | None:
    """Print the build log of a deployment until it ends (resuming after a dropped connection); the status the
    stream ended with."""
    path = f"/v1/orgs/{org}/deployments/{deployment_id}/logs/stream"
    end = None
    for event in follow_events(state.api, path, on_reconnect=lambda n: state.say(f"(reconnecting to the log, "
                                                                                 f"attempt {n})")):
        if event.event == "log":
            printer.line(event.data)
        elif event.event == "end":
            end = event.data
        elif event.event == "revoked":
            raise CliError(f"The log stream was closed: {event.data}.", code="stream_revoked", exit_code=2)
    return end


def _error_lines(tail: list[str]) -> list[str]:
    marked = [t for t in tail if any(w in t.lower() for w in ("error", "failed", "fatal", "exit", "not found"))]
    return (marked or tail)[-15:]


@cli.command()
@common
@yes_option
@click.argument("folder", required=False, type=click.Path(exists=True, file_okay=False, path_type=Path),
                default=".")
@click.option("--prod", is_flag=True, help="Deploy to production (default: a preview).")
@click.option("--env", "env_name", default=None, help="Deploy to this environment instead.")
@project_option
@pass_state
def deploy(state: State, folder: Path, prod: bool, env_name: str | None, project: str | None):
    """Pack FOLDER (honouring .gitignore and .svcignore), upload it, build it and print its address."""
    if project:
        target = resolve_project(state, project, folder)
    else:
        found = config.find_link(folder)
        if found is None:
            state.say(f"{folder.resolve()} is not linked to a project yet.")
            _, data = link_folder(state, folder, None)
        else:
            data = found[1]
        target = Target(state.workspace or data["orgId"], data["projectId"], data.get("projectName", ""))
    packed = pack(folder)
    state.say(f"Packed {packed.files} files, {packed.size:,} bytes.")
    source = state.api.post(f"{target.path}/sources", content=chunks(packed),
                            headers={"Content-Type": "application/gzip", "Content-Length": str(packed.size)},
                            timeout=httpx.Timeout(300.0, connect=10.0))
    packed.file.close()
    env = env_name or ("production" if prod else "preview")
    deployment = state.api.post(f"{target.path}/deployments", json={"env": env, "source": source["id"]})
    state.say(f"Deployment {deployment['id']} ({env}) queued.")
    with LogPrinter(state, f"Building {target.name or target.project}") as printer:
        end = stream_build(state, target.org, deployment["id"], printer=printer)
    final = state.api.get(f"/v1/orgs/{target.org}/deployments/{deployment['id']}")
    status = final.get("status") or end
    result = {"id": final["id"], "status": status, "url": final.get("url")}
    if status != "ready":
        if state.json:
            click.echo(json.dumps({**result, "error": final.get("errorMessage")}))
        else:
            click.secho(f"Build {status}: {final.get('errorMessage') or 'see the log above'}", fg="red", err=True)
            for line in _error_lines(printer.tail):
                click.echo(f"  {line}", err=True)
        raise SystemExit(1)
    state.out(result, lambda: click.echo(f"Ready: {final.get('url')}"))


@cli.command()
@common
@click.argument("deployment", required=False)
@click.option("--follow", "-f", is_flag=True, help="Keep printing until the build ends.")
@click.option("--runtime", is_flag=True, help="The running instances' output instead of the build log.")
@click.option("--lines", "-n", type=click.IntRange(1, 1000), default=100, show_default=True,
              help="Runtime lines to show.")
@project_option
@pass_state
def logs(state: State, deployment: str | None, follow: bool, runtime: bool, lines: int, project: str | None):
    """A deployment's build log, or (--runtime) its instances' output."""
    if runtime:
        target = resolve_project(state, project)
        params = {"lines": lines, **({"deploymentId": deployment} if deployment else {})}
        body = state.api.get(f"{target.path}/runtime-logs", params=params)
        state.out(body, lambda: [click.echo(f"{r.get('at', '')} {r.get('instanceId', '')} {r.get('text', '')}")
                                 for r in body.get("lines") or []])
        return
    if deployment is None:
        target = resolve_project(state, project)
        items = state.api.get(f"{target.path}/deployments", params={"limit": 1}).get("items") or []
        if not items:
            raise CliError("The project has no deployment yet.", code="not_found")
        deployment, org = items[0]["id"], target.org
    else:
        found = config.find_link(Path.cwd())
        org = resolve_workspace(state, found[1] if found else None)
    if state.json:
        printer = LogPrinter(state, "Log")
        end = stream_build(state, org, deployment, printer=printer) if follow else None
        if not follow:
            for event in _stored_log(state, org, deployment):
                printer.line(event)
        click.echo(json.dumps({"id": deployment, "status": end, "lines": printer.tail}))
        return
    if follow:
        with LogPrinter(state, "Following the build") as printer:
            end = stream_build(state, org, deployment, printer=printer)
        state.say(f"Deployment {deployment}: {end}.")
    else:
        for text in _stored_log(state, org, deployment):
            click.echo(text)


def _stored_log(state: State, org: str, deployment_id: str):
    """The lines stored so far, without waiting for more: the stream, closed at its first quiet moment."""
    path = f"/v1/orgs/{org}/deployments/{deployment_id}/logs/stream"
    status = state.api.get(f"/v1/orgs/{org}/deployments/{deployment_id}")["status"]
    finished = status in ("ready", "error", "canceled")
    headers = {"Accept": "text/event-stream"}
    try:
        with state.api.http.stream("GET", path, headers=state.api._headers(headers, True),
                                   timeout=httpx.Timeout(30.0, connect=10.0, read=None if finished else 3.0)) as r:
            if r.status_code >= 400:
                r.read()
                raise ApiError.from_response(r)
            for event in parse_sse(r.iter_lines()):
                if event.event == "log":
                    yield event.data
                elif event.event in ("end", "revoked"):
                    return
    except httpx.ReadTimeout:
        return  # a build still running: no new line for a while, so what is stored has been read


# rollback, open ------------------------------------------------------------------------------------------------

@cli.command()
@common
@yes_option
@click.argument("deployment", required=False)
@project_option
@pass_state
def rollback(state: State, deployment: str | None, project: str | None):
    """Point production back at DEPLOYMENT (default: the previous ready one). No rebuild."""
    t = resolve_project(state, project)
    confirm(state, f"Point production of {t.name or t.project} at "
                   f"{deployment or 'the previous ready deployment'}?")
    d = state.api.post(f"{t.path}/rollback", json={"deploymentId": deployment} if deployment else {})
    state.out(d, f"Production now serves {d['id']}: {d.get('url')}")


@cli.command("open")
@common
@click.option("--no-browser", is_flag=True, help="Only print the address.")
@project_option
@pass_state
def open_(state: State, no_browser: bool, project: str | None):
    """Print the project's address and open it in a browser."""
    t = resolve_project(state, project)
    p = state.api.get(t.path)
    state.out({"id": p["id"], "url": p.get("url")}, p.get("url"))
    if not no_browser and not state.json and sys.stdout.isatty() and p.get("url"):
        click.launch(p["url"])
