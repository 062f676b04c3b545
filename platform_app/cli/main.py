"""The commands of `svc` (docs/cli.md). Click parses and prints help and shell completion; each command is a few
API calls through `client.Api`. Every failure ends as one printed error (message and code; the scope for a 403)
and an exit code: 0 success, 1 a failed build or refused action, 2 usage or authentication."""
from __future__ import annotations

import json
import os
import socket
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import click
import httpx

from platform_app.cli import config
from platform_app.cli.client import Api, ApiError, CliError, follow_events, parse_sse
from platform_app.cli.pack import chunks, pack

CLIENT_ID = "svc-cli"
DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"
DEVICE_SCOPES = "read deploy env:read env:write domains"


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


# login, logout, whoami -----------------------------------------------------------------------------------------

def _store(state: State, token: str, token_id: str | None) -> dict:
    state._api = Api(state.base, token)
    state._me = None
    me = state.me()  # the token works before it is kept
    if token_id is None:
        token_id = (me.get("actingAs") or {}).get("tokenId")
    path = config.save_host(state.base, {"token": token, "tokenId": token_id,
                                         "user": (me.get("user") or {}).get("email")})
    return {"api": state.base, "user": me.get("user"), "tokenId": token_id, "credentials": str(path)}


def device_login(state: State, scopes: str, open_browser: bool) -> dict:
    api = Api(state.base)
    code = api.post("/v1/auth/device/code", auth=False, data={"client_id": CLIENT_ID, "scope": scopes,
                                                              "client_name": socket.gethostname()[:60]})
    user_code, uri = code["user_code"], code["verification_uri"]
    complete = code.get("verification_uri_complete") or uri
    interval, deadline = max(int(code.get("interval") or 5), 1), time.monotonic() + int(code.get("expires_in") or 900)
    if state.json:
        click.echo(json.dumps({"userCode": user_code, "verificationUri": uri, "verificationUriComplete": complete}),
                   err=True)
    else:
        click.echo(f"First copy your one-time code: {click.style(user_code, bold=True)}", err=True)
        click.echo(f"Then open {uri} in a browser and approve.  ({complete})", err=True)
    if open_browser and sys.stdin.isatty():
        click.launch(complete)
    while True:
        if time.monotonic() > deadline:
            raise CliError("The code expired before it was approved.", code="expired_token", exit_code=2)
        time.sleep(interval)
        response = api.send("POST", "/v1/auth/device/token", auth=False,
                            data={"grant_type": DEVICE_GRANT, "device_code": code["device_code"],
                                  "client_id": CLIENT_ID})
        if response.status_code == 200:
            body = response.json()
            api.close()
            return _store(state, body["access_token"], body.get("token_id"))
        error = ApiError.from_response(response)
        if error.code == "authorization_pending":
            continue
        if error.code == "slow_down":
            interval += 5
            continue
        api.close()
        if error.code == "access_denied":
            raise CliError("The sign-in was denied on the dashboard.", code="access_denied", exit_code=2)
        if error.code == "expired_token":
            raise CliError("The code expired before it was approved; run `svc login` again.",
                           code="expired_token", exit_code=2)
        error.exit_code = 2
        raise error


@cli.command()
@common(token=False)
@click.option("--token", "given", metavar="TOKEN", help="Store this API token instead of signing in in a browser.")
@click.option("--scopes", default=DEVICE_SCOPES, show_default=True, help="Scopes to ask for (space or comma).")
@click.option("--no-browser", is_flag=True, help="Do not open a browser; only print the address.")
@pass_state
def login(state: State, given: str | None, scopes: str, no_browser: bool):
    """Sign in: approve a code on the dashboard (device flow), or store a token with --token."""
    if given is not None:
        if not given.startswith("svc_"):
            raise CliError("An API token starts with svc_.", code="invalid_token", exit_code=2)
        result = _store(state, given.strip(), None)
    else:
        result = device_login(state, scopes.replace(",", " "), not no_browser)
    state.out(result, f"Signed in to {result['api']} as {(result['user'] or {}).get('email')}.")


@cli.command()
@common
@pass_state
def logout(state: State):
    """Revoke the stored token on the platform and forget it here."""
    entry = config.host_entry(state.base)
    if entry is None:
        raise CliError(f"Not signed in to {state.base}.", code="not_signed_in", exit_code=2)
    state._api = Api(state.base, entry["token"])
    revoked = False
    token_id = entry.get("tokenId")
    try:
        if not token_id:
            token_id = state.api.get("/v1/auth/token/introspect").get("tokenId")
        if token_id:
            state.api.delete(f"/v1/user/tokens/{token_id}")
            revoked = True
    except ApiError as exc:
        if exc.status != 401:  # 401: revoked or expired already; forgetting it is all that is left
            raise
    config.forget_host(state.base)
    state.out({"api": state.base, "revoked": revoked, "tokenId": token_id},
              f"Signed out of {state.base}" + (" (token revoked)." if revoked else "."))


@cli.command()
@common
@pass_state
def whoami(state: State):
    """The account the token acts as, its scopes and workspaces."""
    me = state.me()

    def human():
        user, acting = me.get("user") or {}, me.get("actingAs") or {}
        click.echo(f"{user.get('email')} on {state.base}")
        click.echo(f"credential: {acting.get('type')}, scopes {', '.join(acting.get('scopes') or [])}"
                   + (f", bound to {acting['orgId']}" if acting.get("orgId") else ""))
        table(["workspace", "name", "role", "id"],
              [[w["slug"], w["name"], w["role"], w["id"]] for w in me.get("workspaces") or []])
    state.out(me, human)


# tokens --------------------------------------------------------------------------------------------------------

@cli.group(cls=Group)
def tokens():
    """API tokens of your account."""


@tokens.command("create")
@common
@click.option("--name", required=True, help="What the token is for.")
@click.option("--scopes", default="read", show_default=True, help="read, deploy, env:read, env:write, domains, admin")
@click.option("--expires", default=None, help="30m, 12h, 90d, 2w; none: never.")
@click.option("--org", "org", default=None, help="Bind the token to one workspace (id or slug).")
@pass_state
def tokens_create(state: State, name: str, scopes: str, expires: str | None, org: str | None):
    """Create a token; its value is printed once."""
    body = {"name": name, "scopes": scopes, "expires": expires}
    # a token bound to a workspace (as `svc login` may make) can only make tokens bound to that workspace
    org = org or state.workspace or (state.me().get("actingAs") or {}).get("orgId")
    if org:
        body["orgId"] = org
    token = state.api.post("/v1/user/tokens", json=body)
    state.out(token, lambda: (click.echo(token["token"]),
                              state.say(f"Token {token['id']} ({', '.join(token['scopes'])}; expires "
                                        f"{token.get('expiresAt') or 'never'}). Its value is shown only now.")))


@tokens.command("ls")
@common
@pass_state
def tokens_ls(state: State):
    """Your active tokens (metadata only)."""
    items = state.api.pages("/v1/user/tokens")
    state.out(items, lambda: table(["id", "name", "prefix", "scopes", "workspace", "expires", "last used"],
                                   [[t["id"], t["name"], t.get("prefix"), ",".join(t.get("scopes") or []),
                                     t.get("orgId") or "all", t.get("expiresAt") or "never", t.get("lastUsedAt")]
                                    for t in items]))


@tokens.command("revoke")
@common
@click.argument("token_id")
@pass_state
def tokens_revoke(state: State, token_id: str):
    """Revoke a token now."""
    state.api.delete(f"/v1/user/tokens/{token_id}")
    state.out({"id": token_id, "revoked": True}, f"Revoked {token_id}.")


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


# env -----------------------------------------------------------------------------------------------------------

@cli.group(cls=Group)
def env():
    """Environment variables of the project."""


def _targets(value: str | None) -> list[str]:
    return [t.strip() for t in (value or "production,preview").split(",") if t.strip()]


@env.command("ls")
@common
@click.option("--target", default=None, help="Only this environment.")
@click.option("--reveal", is_flag=True, help="Show secret values (audited; needs env:read).")
@project_option
@pass_state
def env_ls(state: State, target: str | None, reveal: bool, project: str | None):
    """List variables (secret values hidden unless --reveal)."""
    t = resolve_project(state, project)
    params = {**({"target": target} if target else {}), **({"reveal": "true"} if reveal else {})}
    items = _reveal_pages(state, t, params) if reveal else state.api.pages(f"{t.path}/env", params=params)
    state.out(items, lambda: table(["key", "value", "type", "target", "branch", "id"],
                                   [[v["key"], v.get("value") if v.get("value") is not None else "(secret)",
                                     v["type"], ",".join(v.get("target") or []), v.get("branch"), v["id"]]
                                    for v in items]))


def _reveal_pages(state: State, t: Target, params: dict) -> list:
    items, cursor = [], None
    while True:
        page = state.api.get(f"{t.path}/env", params={**params, "limit": 100, **({"cursor": cursor} if cursor else {})},
                             headers={"x-svc-reveal": "true"})
        items.extend(page.get("items") or [])
        cursor = page.get("nextCursor")
        if not cursor or len(items) >= 10_000:
            return items


@env.command("add")
@common
@click.argument("key")
@click.argument("value")
@click.option("--target", default="production,preview", show_default=True, help="Environments, comma-separated.")
@click.option("--secret", is_flag=True, help="Store as a secret (never shown again without --reveal).")
@click.option("--branch", default=None, help="Only deployments of this branch.")
@project_option
@pass_state
def env_add(state: State, key: str, value: str, target: str, secret: bool, branch: str | None, project: str | None):
    """Add a variable."""
    t = resolve_project(state, project)
    var = state.api.post(f"{t.path}/env", json={"key": key, "value": value, "type": "secret" if secret else "plain",
                                                "target": _targets(target), "branch": branch})
    state.out(var, f"Added {var['key']} ({var['type']}, {','.join(var.get('target') or [])}).")


@env.command("rm")
@common
@yes_option
@click.argument("key")
@click.option("--target", default=None, help="Only the variable of exactly these environments.")
@project_option
@pass_state
def env_rm(state: State, key: str, target: str | None, project: str | None):
    """Remove a variable (every one of that key, unless --target narrows it)."""
    t = resolve_project(state, project)
    wanted = sorted(_targets(target)) if target else None
    matches = [v for v in state.api.pages(f"{t.path}/env")
               if v["key"] == key and (wanted is None or sorted(v.get("target") or []) == wanted)]
    if not matches:
        raise CliError(f"No variable {key}" + (f" for {target}." if target else "."), code="not_found")
    confirm(state, f"Remove {key} ({len(matches)} variable{'s' if len(matches) > 1 else ''})?")
    for v in matches:
        state.api.delete(f"{t.path}/env/{v['id']}")
    state.out({"key": key, "deleted": [v["id"] for v in matches]}, f"Removed {key}.")


def dotenv_quote(value: str) -> str:
    """A double-quoted dotenv value python-dotenv reads back exactly (its escapes: \\\\ \\" \\n \\r \\t)."""
    escaped = (value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")
               .replace("\t", "\\t"))
    return f'"{escaped}"'


@env.command("pull")
@common
@yes_option
@click.argument("file", required=False, type=click.Path(dir_okay=False, path_type=Path), default=".env")
@click.option("--target", default="production", show_default=True, help="The environment to pull.")
@project_option
@pass_state
def env_pull(state: State, file: Path, target: str, project: str | None):
    """Write the environment's variables (secrets included) to a dotenv FILE (default .env)."""
    t = resolve_project(state, project)
    items = [v for v in _reveal_pages(state, t, {"target": target, "reveal": "true"}) if not v.get("branch")]
    if file.exists():
        confirm(state, f"Overwrite {file}?")
    lines = [f"# {t.name or t.project}, environment {target} (svc env pull)"]
    lines += [f"{v['key']}={dotenv_quote(v.get('value') or '')}" for v in sorted(items, key=lambda v: v["key"])]
    fd = os.open(file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # it holds secrets
    with os.fdopen(fd, "w") as f:
        f.write("\n".join(lines) + "\n")
    state.out({"file": str(file), "keys": [v["key"] for v in items]}, f"Wrote {len(items)} variables to {file}.")


# domains -------------------------------------------------------------------------------------------------------

@cli.group(cls=Group)
def domains():
    """Custom domains of the project."""


def _domain_rows(items):
    return [[d["name"], d.get("status"), "yes" if d.get("primary") else "", d["id"]] for d in items]


@domains.command("ls")
@common
@project_option
@pass_state
def domains_ls(state: State, project: str | None):
    """The project's domains and their status."""
    t = resolve_project(state, project)
    items = state.api.pages(f"{t.path}/domains")
    state.out(items, lambda: table(["domain", "status", "primary", "id"], _domain_rows(items)))


def _verification_hint(d: dict) -> str:
    v = d.get("verification")
    if isinstance(v, list):
        return "\n".join(f"  {r.get('type')} {r.get('name') or r.get('domain')} {r.get('value')}"
                         for r in v if isinstance(r, dict))
    if isinstance(v, dict):
        return "\n".join(f"  {k}: {val}" for k, val in v.items())
    return ""


@domains.command("add")
@common
@click.argument("name")
@project_option
@pass_state
def domains_add(state: State, name: str, project: str | None):
    """Add a domain; prints the DNS records that verify it."""
    t = resolve_project(state, project)
    d = state.api.post(f"{t.path}/domains", json={"name": name})
    state.out(d, lambda: (click.echo(f"Added {d['name']} ({d.get('status')})."),
                          (hint := _verification_hint(d)) and click.echo("To verify it, set:\n" + hint)))


def _domain_id(state: State, t: Target, name: str) -> str:
    for d in state.api.pages(f"{t.path}/domains"):
        if name.lower().rstrip(".") in (d["name"].lower(), d["id"].lower()):
            return d["id"]
    raise CliError(f"No domain {name} on this project.", code="not_found")


@domains.command("verify")
@common
@click.argument("name")
@project_option
@pass_state
def domains_verify(state: State, name: str, project: str | None):
    """Check a domain's DNS now."""
    t = resolve_project(state, project)
    d = state.api.post(f"{t.path}/domains/{_domain_id(state, t, name)}/verify")
    state.out(d, lambda: click.echo(f"{d['name']}: {d.get('status')}"
                                    + ("" if d.get("verified") else "\n" + _verification_hint(d))))
    if not d.get("verified"):
        raise SystemExit(1)


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


def main() -> None:
    try:
        cli.main(prog_name="svc")
    except KeyboardInterrupt:
        click.echo("Interrupted.", err=True)
        sys.exit(130)
