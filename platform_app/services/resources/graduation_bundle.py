"""Graduation bundles: the format, the keys a redeem code gives an export, the seal and the signature
(docs/graduation.md).

A bundle is one string, `svcgrad1.<export id>.<payload>.<signature>`: the payload is base64url JSON; the
signature is an HMAC-SHA256 of it under a key derived (HKDF-SHA256) from the redeem code and the export id. So any
instance of the platform checks a bundle with what the bundle and the code carry, and nobody without the code can
change a byte unnoticed. What is secret in it is sealed with Fernet under a second key derived from the code: the
bundle alone reveals no secret. The signature proves the bundle unchanged since it was made with this code, not who
made it: anyone can sign a bundle with a code of their own.
"""
import base64
import hashlib
import hmac
import json
import re

from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from config.errors import ApplicationError, Conflict, ValidationFailed
from config.parsers import json_text_load

FORMAT = "svc-graduation/1"
TOKEN_PREFIX = "svcgrad1"
CODE_PREFIX = "svcg_"


class BundleInvalid(ValidationFailed):
    code = "bundle_invalid"
    default_message = "The bundle is not valid for this redeem code: it was changed, or made with another code."


class Expired(ApplicationError):
    status, code, default_message = 410, "graduation_expired", "This redeem code has expired."


class AlreadyRedeemed(Conflict):
    code, default_message = "already_redeemed", "This redeem code was already used."


def _key(code: str, export_id: str, purpose: str) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=export_id.encode(),
                info=f"{FORMAT} {purpose}".encode()).derive(code.encode())


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class Seal:
    """Fernet under the one-time key a redeem code gives an export: what only the code's holder may read."""

    def __init__(self, code: str, export_id: str):
        self._fernet = Fernet(base64.urlsafe_b64encode(_key(code, export_id, "seal")))

    def seal(self, value: str) -> str:
        return self._fernet.encrypt(value.encode()).decode()

    def open(self, token) -> str:
        if not isinstance(token, str):
            raise BundleInvalid()
        try:
            return self._fernet.decrypt(token.encode()).decode()
        except (InvalidToken, UnicodeDecodeError):
            raise BundleInvalid()


def _signature(code: str, export_id: str, payload: str) -> str:
    return _b64(hmac.new(_key(code, export_id, "sign"), payload.encode(), hashlib.sha256).digest())


def bundle_pack(*, code: str, export_id: str, payload: dict) -> str:
    body = _b64(json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode())
    return f"{TOKEN_PREFIX}.{export_id}.{body}.{_signature(code, export_id, body)}"


def bundle_open(*, code: str, bundle: str) -> dict:
    """The payload of a bundle the code signed; 400 `bundle_invalid` for anything else (checked before the
    payload is parsed, then parsed as the API parses a request body: depth, NUL characters, number range)."""
    parts = bundle.strip().split(".") if isinstance(bundle, str) else []
    if len(parts) != 4 or parts[0] != TOKEN_PREFIX or not re.fullmatch(r"grd_[a-z0-9]{1,36}", parts[1]):
        raise BundleInvalid("This is not a graduation bundle.")
    _, export_id, body, signature = parts
    if not hmac.compare_digest(_signature(code, export_id, body), signature):
        raise BundleInvalid()
    try:
        payload = json_text_load(_unb64(body).decode())
    except (ValueError, ValidationFailed, RecursionError):  # binascii.Error and UnicodeDecodeError are ValueErrors
        raise BundleInvalid()
    if not isinstance(payload, dict) or payload.get("format") != FORMAT or payload.get("id") != export_id:
        raise BundleInvalid("The bundle's format is not one this platform reads.")
    return payload
