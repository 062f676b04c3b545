"""Addresses that may carry credentials (log-drain and alert-webhook URLs), as shown to who may not see them.

Receivers put their keys in the URL: userinfo (`https://user:pass@...`), query values (`?api_key=...`) or a path
segment (`/services/T0/B0/<token>`). Only callers holding `admin` see a URL whole (they could replace it anyway);
viewers, developers and tokens without `admin` get `url_masked()`: where the data goes, never the keys.
"""
import re
from urllib.parse import urlsplit, urlunsplit

MASK = "****"
# A path segment that looks like a key: long, and letters mixed with digits (`XyZsecret12345...`, UUIDs); names
# like `services`, `v1` or `ingest` stay readable.
_KEY_LIKE = re.compile(r"(?=.*[0-9])(?=.*[A-Za-z])[A-Za-z0-9._~%+=-]{16,}")


def url_masked(url: str) -> str:
    """`url` with its userinfo, every query value, its fragment and key-like path segments replaced by ****."""
    try:
        parts = urlsplit(url or "")
    except ValueError:  # not a URL at all: nothing of it is shown
        return MASK
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{MASK}@{netloc.rsplit('@', 1)[1]}"
    path = "/".join(MASK if _KEY_LIKE.fullmatch(segment) else segment for segment in parts.path.split("/"))
    query = "&".join(f"{item.split('=', 1)[0]}={MASK}" if "=" in item else MASK
                     for item in parts.query.split("&") if item)
    return urlunsplit((parts.scheme, netloc, path, query, MASK if parts.fragment else ""))


def channels_masked(channels: list[dict]) -> list[dict]:
    """Alert channels with their webhook URLs masked (email addresses and member roles are no secret)."""
    return [{**channel, "url": url_masked(channel["url"])} if channel.get("url") else channel for channel in channels]
