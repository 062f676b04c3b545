"""What every part of SCIM shares: the schema URNs, the error in SCIM's schema, and readers of untrusted input."""
from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import validate_email

from config.errors import ApplicationError

SCHEMA_USER = "urn:ietf:params:scim:schemas:core:2.0:User"


SCHEMA_GROUP = "urn:ietf:params:scim:schemas:core:2.0:Group"


SCHEMA_PATCH = "urn:ietf:params:scim:api:messages:2.0:PatchOp"


MAX_EMAILS, MAX_MEMBERS_PER_REQUEST, MAX_OPERATIONS = 10, 1000, 100


class ScimError(ApplicationError):
    """An answer in SCIM's error schema: `status`, `detail` and, for 400 and 409, a `scimType`."""

    def __init__(self, status: int, detail: str, scim_type: str | None = None):
        super().__init__(detail, status=status, code=scim_type or "scim_error")
        self.scim_type = scim_type


def invalid(detail: str, scim_type: str = "invalidValue") -> ScimError:
    return ScimError(400, detail, scim_type)


def text_of(data: dict, key: str, *, limit: int, required: bool = False) -> str:
    return string_of(data.get(key), key, limit=limit, required=required)


def string_of(value, key: str, *, limit: int, required: bool = False) -> str:
    if value is None:
        if required:
            raise invalid(f"`{key}` is required.")
        return ""
    if not isinstance(value, str) or len(value) > limit or "\x00" in value:
        raise invalid(f"`{key}` must be a string of at most {limit} characters.")
    value = value.strip()
    if required and not value:
        raise invalid(f"`{key}` is required.")
    return value


def bool_of(value, key: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"  # some directories send "False"
    raise invalid(f"`{key}` must be a boolean.")


def emails_of(value) -> list[dict]:
    if value is None:
        return []
    if not isinstance(value, list) or len(value) > MAX_EMAILS:
        raise invalid(f"`emails` must be a list of at most {MAX_EMAILS} items.")
    emails = []
    for item in value:
        if not isinstance(item, dict) or not isinstance(item.get("value"), str):
            raise invalid("Each of `emails` needs a `value`.")
        address = item["value"].strip()
        try:
            validate_email(address)
        except DjangoValidationError:
            raise invalid(f"Not an email address: {address[:100]}.")
        email = {"value": address, "primary": bool_of(item.get("primary", False), "emails.primary")}
        if isinstance(item.get("type"), str) and item["type"]:
            email["type"] = item["type"][:32]
        emails.append(email)
    return emails


def name_of(value) -> tuple[str, str]:
    if value is None:
        return "", ""
    if not isinstance(value, dict):
        raise invalid("`name` must be an object.")
    return text_of(value, "givenName", limit=150), text_of(value, "familyName", limit=150)


def member_ids_of(value) -> list[str]:
    items = value if isinstance(value, list) else [value]
    if len(items) > MAX_MEMBERS_PER_REQUEST:
        raise invalid(f"At most {MAX_MEMBERS_PER_REQUEST} members per request.")
    ids = []
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("value"), str):
            raise invalid("Each member needs a `value` (a User's id).")
        ids.append(item["value"])
    return list(dict.fromkeys(ids))
