"""A project's variables (ls, add, rm, pull into a dotenv file) and domains (ls, add, verify)."""
from __future__ import annotations

import os
from pathlib import Path

import click

from platform_app.cli.client import CliError
from platform_app.cli.core import (Group, State, Target, cli, common, confirm, pass_state, project_option,
                                   resolve_project, table, yes_option)


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
