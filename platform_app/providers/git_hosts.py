"""Code hosts: OAuth authorization code flow, the signed-in user, repositories, clone URLs."""
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import urlencode, urlsplit

from django.conf import settings

if TYPE_CHECKING:
    import httpx  # imported where a call is made: a web worker that never calls out does not load it

from config.errors import ApplicationError, ServiceUnavailable


class ProviderError(ApplicationError):
    status, code = 502, "provider_error"


@dataclass
class ProviderUser:
    subject: str
    login: str
    email: str
    email_verified: bool
    claims: dict = field(default_factory=dict)  # an ID token's verified claims (OpenID Connect only)


class GitHost:
    name = ""

    @property
    def config(self) -> dict:
        return settings.GIT_PROVIDERS[self.name]

    def require_configured(self) -> None:
        if not self.config.get("client_id"):
            raise ServiceUnavailable(f"The {self.name} provider is not configured.", code="provider_not_configured")

    def authorize_url(self, *, state: str, redirect_uri: str) -> str:
        self.require_configured()
        query = {"client_id": self.config["client_id"], "redirect_uri": redirect_uri, "state": state,
                 "response_type": "code", "scope": self.config["scope"]}
        return f"{self.config['authorize_url']}?{urlencode(query)}"

    def _call(self, method: str, url: str, **kwargs) -> "httpx.Response":
        import httpx

        try:
            resp = httpx.request(method, url, timeout=settings.PROVIDER_TIMEOUT_SECONDS, **kwargs)
        except httpx.HTTPError as exc:
            raise ProviderError(f"{self.name} is unreachable ({exc.__class__.__name__}).")
        if resp.status_code >= 400:
            raise ProviderError(f"{self.name} answered {resp.status_code}: {resp.text[:200]}")
        return resp

    def exchange_code(self, *, code: str, redirect_uri: str) -> str:
        """The access token for an authorization code."""
        self.require_configured()
        data = {"grant_type": "authorization_code", "code": code, "redirect_uri": redirect_uri,
                "client_id": self.config["client_id"], "client_secret": self.config["client_secret"]}
        body = self._call("POST", self.config["token_url"], data=data, headers={"Accept": "application/json"}).json()
        if "access_token" not in body:
            raise ProviderError(f"{self.name} refused the code: {body.get('error_description') or body.get('error')}")
        return body["access_token"]

    def api(self, token: str, path: str, params: dict | None = None):
        return self._call("GET", f"{self.config['api_url'].rstrip('/')}{path}", params=params,
                          headers={"Authorization": f"Bearer {token}", "Accept": "application/json"}).json()

    def clone_url(self, token: str, repo: str) -> str:
        host = urlsplit(self.config["web_url"])
        return f"{host.scheme}://{self.token_user}:{token}@{host.netloc}/{repo}.git"


class GitA(GitHost):
    """GitHub's REST API (`/user`, `/user/emails`, `/user/repos`, installations)."""

    name, token_user = "git-a", "x-access-token"

    def install_url(self, *, state: str) -> str:
        self.require_configured()
        base = self.config["install_url"].format(app=self.config.get("app_slug") or "app")
        return f"{base}?{urlencode({'state': state})}"

    def user(self, token: str) -> ProviderUser:
        me = self.api(token, "/user")
        emails = self.api(token, "/user/emails")
        primary = next((e for e in emails if e.get("primary")), emails[0] if emails else {})
        return ProviderUser(str(me["id"]), me.get("login", ""), (primary.get("email") or me.get("email") or "").lower(),
                            bool(primary.get("verified")))

    def repos(self, token: str, installation_id: str = "") -> list[dict]:
        rows = (self.api(token, f"/user/installations/{installation_id}/repositories")["repositories"]
                if installation_id else self.api(token, "/user/repos", {"per_page": 100}))
        return [{"full_name": r["full_name"], "clone_url": r["clone_url"], "default_branch": r.get("default_branch"),
                 "private": r.get("private", False)} for r in rows]


class GitB(GitHost):
    """GitLab's API v4 (`/user`, `/projects?membership=true`)."""

    name, token_user = "git-b", "oauth2"

    def user(self, token: str) -> ProviderUser:
        me = self.api(token, "/user")
        return ProviderUser(str(me["id"]), me.get("username", ""), (me.get("email") or "").lower(),
                            bool(me.get("confirmed_at")))

    def repos(self, token: str, installation_id: str = "") -> list[dict]:
        rows = self.api(token, "/projects", {"membership": "true", "per_page": 100})
        return [{"full_name": r["path_with_namespace"], "clone_url": r["http_url_to_repo"],
                 "default_branch": r.get("default_branch"), "private": r.get("visibility") != "public"} for r in rows]


class GitC(GitHost):
    """Bitbucket's API 2.0 (`/user`, `/user/emails`, `/repositories?role=member`)."""

    name, token_user = "git-c", "x-token-auth"

    def exchange_code(self, *, code: str, redirect_uri: str) -> str:
        self.require_configured()
        body = self._call("POST", self.config["token_url"], data={"grant_type": "authorization_code", "code": code},
                          auth=(self.config["client_id"], self.config["client_secret"])).json()
        if "access_token" not in body:
            raise ProviderError(f"git-c refused the code: {body.get('error_description') or body.get('error')}")
        return body["access_token"]

    def user(self, token: str) -> ProviderUser:
        me = self.api(token, "/user")
        emails = self.api(token, "/user/emails").get("values", [])
        primary = next((e for e in emails if e.get("is_primary")), {})
        return ProviderUser(me.get("uuid", ""), me.get("username", ""), (primary.get("email") or "").lower(),
                            bool(primary.get("is_confirmed")))

    def repos(self, token: str, installation_id: str = "") -> list[dict]:
        rows = self.api(token, "/repositories", {"role": "member", "pagelen": 100}).get("values", [])
        return [{"full_name": r["full_name"],
                 "clone_url": next((c["href"] for c in r.get("links", {}).get("clone", []) if c.get("name") == "https"), ""),
                 "default_branch": (r.get("mainbranch") or {}).get("name"), "private": r.get("is_private", False)}
                for r in rows]


GIT_HOSTS = {cls.name: cls for cls in (GitA, GitB, GitC)}


def git_host(name: str) -> GitHost:
    from config.errors import NotFound

    if name not in GIT_HOSTS:
        raise NotFound(f"Unknown provider {name}; use git-a, git-b or git-c.")
    return GIT_HOSTS[name]()


def _github_pull_request(host: GitHost, token: str, *, repo: str, base: str, head: str, title: str, body: str,
                         files: dict) -> dict:
    """Branch from `base`, commit `files` (path → full new text) through the contents API, open the pull request."""
    import base64

    import httpx

    auth = {"Authorization": f"Bearer {token}", "Accept": "application/vnd.github+json"}
    api = host.config["api_url"].rstrip("/")
    ref = host._call("GET", f"{api}/repos/{repo}/git/ref/heads/{base}", headers=auth).json()
    host._call("POST", f"{api}/repos/{repo}/git/refs", headers=auth,
               json={"ref": f"refs/heads/{head}", "sha": ref["object"]["sha"]})
    for path, text in files.items():
        current = httpx.get(f"{api}/repos/{repo}/contents/{path}", params={"ref": head}, headers=auth,
                            timeout=settings.PROVIDER_TIMEOUT_SECONDS)
        payload = {"message": title, "branch": head, "content": base64.b64encode(text.encode()).decode()}
        if current.status_code == 200:
            payload["sha"] = current.json()["sha"]
        host._call("PUT", f"{api}/repos/{repo}/contents/{path}", headers=auth, json=payload)
    pr = host._call("POST", f"{api}/repos/{repo}/pulls", headers=auth,
                    json={"title": title, "head": head, "base": base, "body": body}).json()
    return {"url": pr["html_url"], "number": pr["number"]}


def _github_file(host: GitHost, token: str, *, repo: str, ref: str, path: str) -> str | None:
    import base64

    import httpx

    resp = httpx.get(f"{host.config['api_url'].rstrip('/')}/repos/{repo}/contents/{path}", params={"ref": ref},
                     headers={"Authorization": f"Bearer {token}", "Accept": "application/vnd.github+json"},
                     timeout=settings.PROVIDER_TIMEOUT_SECONDS)
    return base64.b64decode(resp.json()["content"]).decode() if resp.status_code == 200 else None


GitA.pull_request = _github_pull_request
GitA.file_text = _github_file
