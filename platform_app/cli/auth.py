"""Signing in (the device flow, or a given token), signing out, who you are, and your API tokens."""
from __future__ import annotations

import json
import socket
import sys
import time

import click

from platform_app.cli import config
from platform_app.cli.client import Api, ApiError, CliError
from platform_app.cli.core import Group, State, cli, common, pass_state, table


CLIENT_ID = "svc-cli"


DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"


DEVICE_SCOPES = "read deploy env:read env:write domains"


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
