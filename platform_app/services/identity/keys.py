"""RS256 signing keys of the identity provider and the JWKS they publish.

The private key comes from JWT_PRIVATE_KEY (PEM) or JWT_PRIVATE_KEY_FILE; without
either, a development key is generated once into the data folder. Public keys in
JWT_EXTRA_PUBLIC_KEYS stay valid for verification after a rotation.
"""
import base64
import hashlib
import json
import secrets
from datetime import timedelta
from functools import lru_cache

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from django.conf import settings
from django.utils import timezone

from config.errors import Unauthenticated
from config.secret_files import secret_file


def _dev_key_path():
    return settings.DATA_DIR / "jwt-private.pem"


def _generate_dev_key() -> bytes:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _private_pem() -> bytes:
    if settings.JWT_PRIVATE_KEY:
        return settings.JWT_PRIVATE_KEY.replace("\\n", "\n").encode()
    if settings.JWT_PRIVATE_KEY_FILE:
        with open(settings.JWT_PRIVATE_KEY_FILE, "rb") as fh:
            return fh.read()
    return secret_file(_dev_key_path(), _generate_dev_key)


def key_id(public_key) -> str:
    der = public_key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return base64.urlsafe_b64encode(hashlib.sha256(der).digest()[:12]).decode().rstrip("=")


@lru_cache(maxsize=1)
def signing_key():
    """(kid, private key) of the current key."""
    private = serialization.load_pem_private_key(_private_pem(), password=None)
    return key_id(private.public_key()), private


@lru_cache(maxsize=1)
def public_keys() -> dict:
    """kid → public key, for every key we accept."""
    kid, private = signing_key()
    keys = {kid: private.public_key()}
    blocks = settings.JWT_EXTRA_PUBLIC_KEYS.replace("\\n", "\n").split("-----END PUBLIC KEY-----")
    for block in blocks:
        if "BEGIN PUBLIC KEY" in block:
            pub = serialization.load_pem_public_key((block.strip() + "\n-----END PUBLIC KEY-----\n").encode())
            keys[key_id(pub)] = pub
    return keys


def jwks() -> dict:
    out = []
    for kid, pub in public_keys().items():
        jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(pub))
        jwk.update({"kid": kid, "alg": "RS256", "use": "sig"})
        out.append(jwk)
    return {"keys": out}


def token_issue(*, subject: str, audience: str, ttl_seconds: int, **claims) -> tuple[str, int]:
    """Sign an RS256 JWT; returns (token, lifetime in seconds)."""
    kid, private = signing_key()
    now = timezone.now()
    payload = {
        "iss": settings.JWT_ISSUER, "aud": audience, "sub": subject,
        "iat": int(now.timestamp()), "exp": int((now + timedelta(seconds=ttl_seconds)).timestamp()),
        "jti": secrets.token_urlsafe(12), **claims,
    }
    return jwt.encode(payload, private, algorithm="RS256", headers={"kid": kid}), ttl_seconds


def token_verify(token: str, *, audience: str, jwks_url: str = "") -> dict:
    """Verify signature (RS256 only), kid, exp, iss and aud; raise 401 otherwise."""
    try:
        header = jwt.get_unverified_header(token)
    except jwt.PyJWTError:
        raise Unauthenticated("The access token is malformed.", code="invalid_token")
    if header.get("alg") != "RS256":
        raise Unauthenticated("The access token is not signed with RS256.", code="invalid_token")
    if jwks_url:
        try:
            key = _jwks_client(jwks_url).get_signing_key_from_jwt(token).key
        except jwt.PyJWTError:
            raise Unauthenticated("The access token's key is unknown.", code="invalid_token")
    else:
        key = public_keys().get(header.get("kid"))
        if key is None:
            raise Unauthenticated("The access token's key is unknown.", code="invalid_token")
    try:
        return jwt.decode(token, key, algorithms=["RS256"], audience=audience, issuer=settings.JWT_ISSUER,
                          options={"require": ["exp", "iat", "sub", "aud", "iss"]})
    except jwt.ExpiredSignatureError:
        raise Unauthenticated("The access token has expired.", code="token_expired")
    except jwt.PyJWTError as exc:
        raise Unauthenticated(f"The access token is invalid ({exc}).", code="invalid_token")


@lru_cache(maxsize=4)
def _jwks_client(url: str):
    return jwt.PyJWKClient(url, cache_keys=True, lifespan=300)


def sha256_hex(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()
