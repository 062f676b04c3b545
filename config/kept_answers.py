"""Whole answers kept for requests without credentials, sent by the ASGI handler without entering Django.

Some answers are the same for every such request until the data behind them changes: the directory's lists and
search pages. A view says so with `keep(response, *caches)`, naming the local caches (config.local_cache) its answer
was read from; the edge adds its host cache, since the host must still be the platform's. The handler
(config/asgi.py) records the messages it sends for that request and keeps them by the request's key. A later
request with the same key gets the recorded messages from the event loop while every named cache still holds what
it held: nothing cleared since, and no version check due. When a check comes due, the next such request goes
through Django, whose view reads the caches and so checks their shared versions; a change anywhere reaches every
process as fast as it reaches the caches themselves.

Only a GET whose headers are all in PASSIVE has a key (so no cookie, credentials or conditional request): the
scheme, the path, the query string and the headers an answer may vary on (VARIES). A view keeps only an answer
that varies on nothing else. An answer that sets a cookie, is not a 200 or streams is not kept.
Figures: docs/performance.md.
"""
import time

from django.conf import settings

from config import local_cache
from config.local_cache import MISSING, LocalCache

# Headers that change nothing in a kept answer (or that VARIES keys it by); any other sends the request to Django.
PASSIVE = frozenset({
    b"host", b"user-agent", b"accept", b"accept-encoding", b"accept-language", b"connection", b"cache-control",
    b"pragma", b"referer", b"dnt", b"priority", b"upgrade-insecure-requests", b"x-forwarded-for",
    b"x-forwarded-proto", b"x-real-ip", b"sec-fetch-dest", b"sec-fetch-mode", b"sec-fetch-site", b"sec-fetch-user",
    b"sec-ch-ua", b"sec-ch-ua-mobile", b"sec-ch-ua-platform",
})
VARIES = (b"host", b"accept", b"accept-encoding", b"x-forwarded-proto")

answers = LocalCache("kept-answers", ttl=settings.KEPT_ANSWERS_TTL_SECONDS, check_setting=None, max_entries=4096,
                     max_bytes=settings.KEPT_ANSWERS_BYTES)


def keep(response, *caches: LocalCache):
    """Mark `response` as the answer to every request with its key while `caches` hold what they hold now."""
    response.kept_while = (*getattr(response, "kept_while", ()), *caches)
    return response


def request_key(scope) -> tuple | None:
    if scope["method"] != "GET":
        return None
    varies = dict.fromkeys(VARIES)
    for name, value in scope["headers"]:
        if name not in PASSIVE:
            return None
        if name in varies:
            if varies[name] is not None:
                return None  # a repeated header: let Django decide what it means
            varies[name] = value
    return (scope.get("scheme"), scope["path"], scope["query_string"], *varies.values())


def kept(key: tuple) -> tuple | None:
    """The recorded messages for `key`, if every cache the answer was read from still holds what it held."""
    entry = answers.get(key)
    if entry is MISSING:
        return None
    messages, held = entry
    now = time.monotonic()
    return messages if all(cache.holds(generation, now) for cache, generation in held) else None


def request_started() -> int:
    """What `store` needs to know the answer was made from caches that no clear has touched since the request
    started (read on the event loop before the request goes to Django)."""
    return local_cache.clears


def store(key: tuple, started: int, response, messages: list) -> None:
    if local_cache.clears != started:
        return  # some cache was cleared meanwhile: the answer may rest on an entry now gone
    held = tuple((cache, cache.generation) for cache in dict.fromkeys(response.kept_while))
    size = 200 + sum(len(m.get("body", b"")) + sum(len(n) + len(v) for n, v in m.get("headers", ()))
                     for m in messages)
    answers.set(key, (tuple(messages), held), size=size)


def keepable(response) -> bool:
    return (bool(getattr(response, "kept_while", None)) and response.status_code == 200 and not response.streaming
            and not response.cookies)
