"""PATCH (RFC 7644 3.5.2): the operations of a PatchOp body, applied to a User's or a Group's state."""
import re

from platform_app.services.org.scim.common import (MAX_EMAILS, MAX_OPERATIONS, SCHEMA_GROUP, SCHEMA_PATCH,
                                                   SCHEMA_USER, ScimError, bool_of, emails_of, invalid,
                                                   member_ids_of, name_of, string_of)

def patch_operations(data) -> list[tuple[str, str, object]]:
    """(op, path, value) of a PatchOp body: op add/replace/remove (any case), path lower-cased without the core
    schema's URN."""
    if not isinstance(data, dict) or not isinstance(data.get("Operations"), list):
        raise invalid("A PatchOp body needs `Operations`.", "invalidSyntax")
    schemas = data.get("schemas")
    if schemas is not None and (not isinstance(schemas, list) or SCHEMA_PATCH not in schemas):
        raise invalid(f"`schemas` must include {SCHEMA_PATCH}.", "invalidSyntax")
    if not data["Operations"] or len(data["Operations"]) > MAX_OPERATIONS:
        raise invalid(f"Between 1 and {MAX_OPERATIONS} operations.", "invalidSyntax")
    found = []
    for item in data["Operations"]:
        op = item.get("op") if isinstance(item, dict) else None
        if not isinstance(op, str) or op.lower() not in ("add", "replace", "remove"):
            raise invalid("Each operation's `op` is add, replace or remove.", "invalidSyntax")
        path = item.get("path")
        if path is not None and (not isinstance(path, str) or len(path) > 300):
            raise invalid("`path` must be a string.", "invalidPath")
        path = core_path(path or "")
        if op.lower() == "remove" and not path:
            raise ScimError(400, "A remove operation needs a `path`.", "noTarget")
        if op.lower() != "remove" and "value" not in item:
            raise invalid(f"A {op} operation needs a `value`.", "invalidSyntax")
        found.append((op.lower(), path, item.get("value")))
    return found


def core_path(path: str) -> str:
    path = path.strip()
    for schema in (SCHEMA_USER, SCHEMA_GROUP):
        if path.lower().startswith(schema.lower() + ":"):
            path = path[len(schema) + 1:]
    return path


EMAIL_FILTER = re.compile(r'^emails\[\s*(type|primary)\s+eq\s+("?)([^"\]]*)\2\s*\](?:\.(value))?$', re.IGNORECASE)


MEMBER_FILTER = re.compile(r'^members\[\s*value\s+eq\s+"([^"]+)"\s*\]$', re.IGNORECASE)


def patch_user(state: dict, op: str, path: str, value) -> None:
    if not path:  # the value is an object of attributes (and dotted sub-attributes) to add or replace
        if not isinstance(value, dict):
            raise invalid("An operation without `path` needs an object `value`.")
        for key, item in value.items():
            patch_user(state, op, core_path(str(key)), item)
        return
    lower = path.lower()
    email_match = EMAIL_FILTER.match(path)
    if lower.startswith("urn:"):
        return  # an extension schema's attribute (enterprise user: department, manager...): not kept
    if email_match:
        _patch_email(state, op, email_match, value)
    elif lower == "active":
        if op == "remove":
            raise ScimError(400, "`active` cannot be removed.", "mutability")
        state["active"] = bool_of(value, "active")
    elif lower in ("username", "externalid", "displayname"):
        key = {"username": "user_name", "externalid": "external_id", "displayname": "display_name"}[lower]
        if op == "remove":
            if key == "user_name":
                raise ScimError(400, "`userName` is required.", "mutability")
            state[key] = ""
        else:
            state[key] = string_of(value, path, limit=255, required=key == "user_name")
    elif lower in ("name.givenname", "name.familyname"):
        key = "given_name" if lower == "name.givenname" else "family_name"
        state[key] = "" if op == "remove" else string_of(value, path, limit=150)
    elif lower == "name.formatted":
        return  # derived from the given and family names
    elif lower == "name":
        state["given_name"], state["family_name"] = ("", "") if op == "remove" else name_of(value)
    elif lower == "emails":
        if op == "remove":
            state["emails"] = []
        else:
            added = emails_of(value if isinstance(value, list) else [value])
            state["emails"] = added if op == "replace" else _merge_emails(state["emails"], added)
    else:
        raise ScimError(400, f"Unknown or read-only attribute path: {path[:100]}.", "invalidPath")


def _merge_emails(current: list, added: list) -> list:
    """`added` replace the same addresses; an added primary makes the others not primary (RFC 7643 2.4: one)."""
    kept = [e for e in current if e["value"].lower() not in {a["value"].lower() for a in added}]
    if any(a.get("primary") for a in added):
        kept = [{**e, "primary": False} for e in kept]
    merged = kept + added
    if len(merged) > MAX_EMAILS:
        raise invalid(f"At most {MAX_EMAILS} emails.")
    return merged


def _patch_email(state: dict, op: str, match, value) -> None:
    attribute, wanted = match.group(1).lower(), match.group(3)

    def hit(email):
        if attribute == "type":
            return email.get("type", "").lower() == wanted.lower()
        return email.get("primary", False) == (wanted.lower() == "true")

    if op == "remove":
        state["emails"] = [e for e in state["emails"] if not hit(e)]
        return
    if match.group(4) is None:  # the whole matching email
        replacement = emails_of([value])[0]
        state["emails"] = [replacement if hit(e) else e for e in state["emails"]]
        if not any(hit(e) for e in state["emails"]):
            state["emails"].append(replacement)
        return
    address = emails_of([{"value": value}])[0]["value"]
    for email in state["emails"]:
        if hit(email):
            email["value"] = address
            return
    new = {"value": address, "primary": attribute == "primary" and wanted.lower() == "true"}
    if attribute == "type":
        new["type"] = wanted[:32]
    state["emails"] = _merge_emails(state["emails"], [new])


def patch_group(state: dict, op: str, path: str, value) -> None:
    if not path:
        if not isinstance(value, dict):
            raise invalid("An operation without `path` needs an object `value`.")
        for key, item in value.items():
            patch_group(state, op, core_path(str(key)), item)
        return
    lower, member = path.lower(), MEMBER_FILTER.match(path)
    if member:
        if op != "remove":
            raise invalid("A member filter path is for remove.", "invalidPath")
        state["members"] = [m for m in state["members"] if m != member.group(1)]
    elif lower == "members":
        if op == "remove":
            gone = set(member_ids_of(value)) if value is not None else set(state["members"])
            state["members"] = [m for m in state["members"] if m not in gone]
        elif op == "add":
            state["members"] = list(dict.fromkeys([*state["members"], *member_ids_of(value)]))
        else:
            state["members"] = member_ids_of(value) if value else []
    elif lower == "displayname":
        if op == "remove":
            raise ScimError(400, "`displayName` is required.", "mutability")
        state["display_name"] = string_of(value, path, limit=255, required=True)
    elif lower == "externalid":
        state["external_id"] = "" if op == "remove" else string_of(value, path, limit=255)
    else:
        raise ScimError(400, f"Unknown or read-only attribute path: {path[:100]}.", "invalidPath")
