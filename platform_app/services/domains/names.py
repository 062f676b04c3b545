"""Host names as users type them → the one form stored and compared: lower-case ASCII, IDN as punycode
(Python's `idna` codec), no trailing dot."""
import re

from django.conf import settings

from config.errors import ValidationFailed

LABEL = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)$")


def _invalid(field: str, message: str):
    raise ValidationFailed(f"{field}: {message}", details={field: [message]})


def hostname_normalize(value, *, field: str = "name") -> str:
    """`Bücher.Example.` → `xn--bcher-kva.example`; anything that is not a host name of two labels or more
    (IP addresses, wildcards, URLs, ports, empty labels) is a 400 `validation_error` naming `field`."""
    if not isinstance(value, str) or not value.strip():
        _invalid(field, "Must be a host name such as www.example.com.")
    name = value.strip().rstrip(".")
    if any(c in name for c in "/:@*?#[]\\ ") or any(ord(c) < 0x21 for c in name):
        _invalid(field, "Must be a host name such as www.example.com (no scheme, port, path or wildcard).")
    try:
        name = name.encode("idna").decode("ascii").lower()
        name.encode("ascii").decode("idna")  # an `xn--` label must be valid punycode
    except UnicodeError:
        _invalid(field, "Not a valid internationalised host name.")
    labels = name.split(".")
    if len(name) > 253 or len(labels) < 2 or not all(LABEL.match(label) for label in labels):
        _invalid(field, "Must be a host name such as www.example.com (labels of letters, digits and dashes).")
    if labels[-1].isdigit():
        _invalid(field, "Must be a host name, not an IP address.")
    return name


def hostname_reserved(name: str) -> str | None:
    """The platform domain `name` is, or lies under (DOMAINS_RESERVED); None when it is free to add."""
    for reserved in settings.DOMAINS_RESERVED:
        if name == reserved or name.endswith("." + reserved):
            return reserved
    return None
