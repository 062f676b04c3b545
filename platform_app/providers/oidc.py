"""OpenID Connect: discovery, authorization code with PKCE (S256), ID token verified against the JWKS."""
import base64
import hashlib
from functools import lru_cache
from urllib.parse import urlencode

import httpx
import jwt
from django.conf import settings

from config.errors import ServiceUnavailable, Unauthenticated
from platform_app.providers.git_hosts import ProviderError, ProviderUser


def pkce_challenge(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")


@lru_cache(maxsize=4)
def _discovery(issuer: str) -> dict:
    try:
        resp = httpx.get(f"{issuer.rstrip('/')}/.well-known/openid-configuration",
                         timeout=settings.PROVIDER_TIMEOUT_SECONDS)
        resp.raise_for_status()
    except httpx.HTTPError as exc:
        raise ProviderError(f"The identity provider's discovery document is unreachable ({exc.__class__.__name__}).")
    return resp.json()


class OidcProvider:
    name = "idp"

    @property
    def config(self) -> dict:
        if not (settings.IDP["issuer"] and settings.IDP["client_id"]):
            raise ServiceUnavailable("The identity provider is not configured.", code="provider_not_configured")
        return settings.IDP

    def authorize_url(self, *, state: str, redirect_uri: str, nonce: str, code_verifier: str) -> str:
        meta = _discovery(self.config["issuer"])
        query = {"client_id": self.config["client_id"], "response_type": "code", "scope": self.config["scope"],
                 "redirect_uri": redirect_uri, "state": state, "nonce": nonce,
                 "code_challenge": pkce_challenge(code_verifier), "code_challenge_method": "S256"}
        return f"{meta['authorization_endpoint']}?{urlencode(query)}"

    def sign_in(self, *, code: str, redirect_uri: str, code_verifier: str, nonce: str) -> ProviderUser:
        """Exchange the code, then verify the ID token: signature (JWKS), issuer, audience, expiry, nonce."""
        config = self.config
        meta = _discovery(config["issuer"])
        try:
            resp = httpx.post(meta["token_endpoint"], timeout=settings.PROVIDER_TIMEOUT_SECONDS, data={
                "grant_type": "authorization_code", "code": code, "redirect_uri": redirect_uri,
                "client_id": config["client_id"], "client_secret": config["client_secret"],
                "code_verifier": code_verifier})
        except httpx.HTTPError as exc:
            raise ProviderError(f"The identity provider is unreachable ({exc.__class__.__name__}).")
        if resp.status_code >= 400 or "id_token" not in resp.json():
            raise ProviderError(f"The identity provider refused the code: {resp.text[:200]}")
        id_token = resp.json()["id_token"]
        try:
            key = jwt.PyJWKClient(meta["jwks_uri"]).get_signing_key_from_jwt(id_token).key
            claims = jwt.decode(id_token, key, algorithms=["RS256", "ES256"], audience=config["client_id"],
                                issuer=meta.get("issuer", config["issuer"]), options={"require": ["exp", "sub", "aud"]})
        except jwt.PyJWTError as exc:
            raise Unauthenticated(f"The ID token is not valid ({exc}).", code="invalid_id_token")
        if claims.get("nonce") != nonce:
            raise Unauthenticated("The ID token's nonce does not match.", code="invalid_id_token")
        return ProviderUser(str(claims["sub"]), claims.get("preferred_username", ""),
                            (claims.get("email") or "").lower(), bool(claims.get("email_verified")))
