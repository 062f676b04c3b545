"""Secrets that travel in URLs never reach a log line.

Some credentials are part of a request's URL: log-stream tokens (`?token=`, EventSource cannot send headers),
OAuth codes and states, email verification links, deploy-hook secrets and invitation tokens (path segments). The
access log (gunicorn/uvicorn, config/gunicorn.py) and Django's request log ("Method Not Allowed: <path>") write
URLs whole, so both get `RedactSecrets`: it rewrites a record's message before any handler formats it.

Plain Python on purpose: gunicorn's master loads it from config/gunicorn.py before Django is set up.
"""
import logging
import re

REDACTED = "[redacted]"
# Query parameters whose value is a credential, by name (case-insensitive, `_`/`-` alike).
SECRET_PARAMETERS = ("token", "access_token", "refresh_token", "id_token", "code", "state", "secret", "key",
                     "api_key", "apikey", "password", "signature", "sig", "session")
# Paths whose next segment is the credential itself.
SECRET_SEGMENTS = ("/v1/hooks/deploy/", "/v1/invitations/", "/invitations/")

_PARAMETER = re.compile(
    r"(?P<lead>[?&;](?:%s)=)[^&;#\s\"']*" % "|".join(re.escape(n).replace("_", "[_-]") for n in SECRET_PARAMETERS),
    re.IGNORECASE)
_SEGMENT = re.compile(r"(?P<lead>(?:%s))(?!\[redacted\])[^/?#\s\"']+" % "|".join(re.escape(p) for p in SECRET_SEGMENTS))


def redact(text: str) -> str:
    """`text` with the value of every secret query parameter and every secret path segment replaced."""
    if "=" not in text and "/invitations/" not in text and "/hooks/deploy/" not in text:
        return text  # the common line: nothing to look at
    text = _PARAMETER.sub(lambda m: m.group("lead") + REDACTED, text)
    return _SEGMENT.sub(lambda m: m.group("lead") + REDACTED, text)


class RedactSecrets(logging.Filter):
    """A logging filter (on a logger or a handler) that redacts the record's message in place; it drops nothing."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a malformed record is the formatter's to report
            return True
        cleaned = redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, ()
        return True
