"""OpenID Connect: discovery, authorization code with PKCE (S256), ID token verified against the JWKS.

`OidcClient` speaks the protocol to one provider. `OidcProvider` is the platform's own `idp` (settings, an address
the operator chose); `GuardedOidcClient` is a workspace's provider (docs/org.md): its issuer is a user's input, so
discovery, the token endpoint and the JWKS are fetched through the outbound guard (config/outbound.py)."""
import base64
import hashlib
import json
from functools import lru_cache
from urllib.parse import urlencode

import jwt
from django.conf import settings

from config.errors import ServiceUnavailable, Unauthenticated
from config.outbound import outbound_request
from platform_app.providers.git_hosts import ProviderError, ProviderUser

ID_TOKEN_ALGORITHMS = ["RS256", "ES256"]
CLAIM_TYPES = {"sub": (str, int), "email": str, "email_verified": bool, "preferred_username": str, "name": str}


def pkce_challenge(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")


def discovery_url(issuer: str) -> str:
    return f"{issuer.rstrip('/')}/.well-known/openid-configuration"


@lru_cache(maxsize=4)
def _discovery(issuer: str) -> dict:
    import httpx

    try:
        resp = httpx.get(discovery_url(issuer), timeout=settings.PROVIDER_TIMEOUT_SECONDS)
        resp.raise_for_status()
    except httpx.HTTPError as exc:
        raise ProviderError(f"The identity provider's discovery document is unreachable ({exc.__class__.__name__}).")
    return resp.json()


class OidcClient:
    """One OpenID provider: `config` holds `issuer`, `client_id`, `client_secret`, `scope`."""

    name = "oidc"

    def __init__(self, config: dict):
        self._config = config

    @property
    def config(self) -> dict:
        return self._config

    # transport (the guarded client overrides these three) ------------------------------------------------
    def discovery(self) -> dict:
        return _discovery(self.config["issuer"])

    def _post_form(self, url: str, data: dict) -> tuple[int, dict | None, str]:
        import httpx

        try:
            resp = httpx.post(url, timeout=settings.PROVIDER_TIMEOUT_SECONDS, data=data)
        except httpx.HTTPError as exc:
            raise ProviderError(f"The identity provider is unreachable ({exc.__class__.__name__}).")
        return resp.status_code, _json_or_none(resp.text), resp.text

    def _signing_key(self, jwks_uri: str, id_token: str):
        return jwt.PyJWKClient(jwks_uri).get_signing_key_from_jwt(id_token).key

    # protocol ---------------------------------------------------------------------------------------------
    def authorize_url(self, *, state: str, redirect_uri: str, nonce: str, code_verifier: str) -> str:
        meta = self.discovery()
        query = {"client_id": self.config["client_id"], "response_type": "code", "scope": self.config["scope"],
                 "redirect_uri": redirect_uri, "state": state, "nonce": nonce,
                 "code_challenge": pkce_challenge(code_verifier), "code_challenge_method": "S256"}
        return f"{meta['authorization_endpoint']}?{urlencode(query)}"

    def sign_in(self, *, code: str, redirect_uri: str, code_verifier: str, nonce: str) -> ProviderUser:
        """Exchange the code, then verify the ID token: signature (JWKS), issuer, audience, expiry, nonce."""
        config = self.config
        meta = self.discovery()
        status, body, text = self._post_form(meta["token_endpoint"], {
            "grant_type": "authorization_code", "code": code, "redirect_uri": redirect_uri,
            "client_id": config["client_id"], "client_secret": config["client_secret"],
            "code_verifier": code_verifier})
        if status >= 400 or not isinstance(body, dict) or not isinstance(body.get("id_token"), str):
            raise ProviderError(f"The identity provider refused the code: {text[:200]}")
        id_token = body["id_token"]
        try:
            key = self._signing_key(meta["jwks_uri"], id_token)
            claims = jwt.decode(id_token, key, algorithms=ID_TOKEN_ALGORITHMS, audience=config["client_id"],
                                issuer=meta.get("issuer", config["issuer"]), options={"require": ["exp", "sub", "aud"]})
        except jwt.PyJWTError as exc:
            raise Unauthenticated(f"The ID token is not valid ({exc}).", code="invalid_id_token")
        if claims.get("nonce") != nonce:
            raise Unauthenticated("The ID token's nonce does not match.", code="invalid_id_token")
        for name, kind in CLAIM_TYPES.items():  # signed, but still the provider's word: typed before use
            if name in claims and not isinstance(claims[name], kind):
                raise Unauthenticated(f"The ID token's `{name}` claim is not of its type.", code="invalid_id_token")
        return ProviderUser(str(claims["sub"]), claims.get("preferred_username", ""),
                            (claims.get("email") or "").lower(), bool(claims.get("email_verified")), claims=claims)


class OidcProvider(OidcClient):
    """The platform's identity provider `idp` (settings.IDP)."""

    name = "idp"

    def __init__(self):
        super().__init__({})

    @property
    def config(self) -> dict:
        if not (settings.IDP["issuer"] and settings.IDP["client_id"]):
            raise ServiceUnavailable("The identity provider is not configured.", code="provider_not_configured")
        return settings.IDP


class GuardedOidcClient(OidcClient):
    """A provider at an address a user gave: every request goes through the outbound guard, whose refusals are
    its one generic 400; a provider that answers nonsense is 502 `provider_error`."""

    def _get_json(self, url: str, what: str) -> dict:
        resp = outbound_request("GET", url, purpose="sso", headers={"Accept": "application/json"},
                                max_bytes=256 * 1024, timeout=settings.PROVIDER_TIMEOUT_SECONDS)
        body = _json_or_none(resp.text) if resp.status_code == 200 else None
        if not isinstance(body, dict):
            raise ProviderError(f"The identity provider's {what} could not be read (HTTP {resp.status_code}).")
        return body

    def discovery(self) -> dict:
        meta = self._get_json(discovery_url(self.config["issuer"]), "discovery document")
        for name in ("issuer", "authorization_endpoint", "token_endpoint", "jwks_uri"):
            if not isinstance(meta.get(name), str) or not meta[name]:
                raise ProviderError(f"The identity provider's discovery document has no `{name}`.")
        if meta["issuer"].rstrip("/") != self.config["issuer"].rstrip("/"):
            raise ProviderError("The discovery document names another issuer "
                                f"({meta['issuer'][:200]}); give the issuer exactly as the provider does.")
        return meta

    def _post_form(self, url: str, data: dict) -> tuple[int, dict | None, str]:
        resp = outbound_request("POST", url, purpose="sso", content=urlencode(data).encode(),
                                headers={"Content-Type": "application/x-www-form-urlencoded",
                                         "Accept": "application/json"},
                                max_bytes=256 * 1024, timeout=settings.PROVIDER_TIMEOUT_SECONDS)
        return resp.status_code, _json_or_none(resp.text), resp.text

    def _signing_key(self, jwks_uri: str, id_token: str):
        jwks = self._get_json(jwks_uri, "key set")
        kid = jwt.get_unverified_header(id_token).get("kid")
        try:
            keys = [k for k in jwt.PyJWKSet.from_dict(jwks).keys if kid is None or k.key_id == kid]
        except jwt.PyJWTError as exc:
            raise jwt.InvalidTokenError(f"unusable key set: {exc}")
        if not keys:
            raise jwt.InvalidTokenError("no key of the provider's key set signed it")
        return keys[0].key


def _json_or_none(text: str):
    try:
        return json.loads(text)
    except ValueError:
        return None
