"""Workspace answers kept whole: a list or detail the API answered is sent again, without reading or rendering it,
until something it shows changes; the dashboard keeps the costly parts of its pages the same way.

What an answer shows is rows of its workspace (projects, deployments, their events and environment variables),
and every committed change to those rows moves the workspace's answer stamp (`models.AnswerStamp`, moved by
database triggers whatever code wrote the rows). The membership lookup every request into a workspace runs reads
the stamp with it (`workspace.answers_version`), so a kept answer costs the access check and nothing more, and a
change reaches every process at once: the next request reads the new stamp and misses.

The access check runs on every request, kept or not. An answer is kept by the workspace, the stamp, the full path,
the negotiated media type and the caller's role and token scopes (so no answer crosses roles). It is read and kept
only outside a transaction: there every statement sees committed rows only, and the stamp read before the answer's
rows is never newer than they are; inside one, the caller's own uncommitted changes have not moved the stamp.
Answers that show what no stamp follows (a deployment's place in the build queue, which every workspace's builds
move) say so with `keep=`, and are not kept. Figures: docs/performance.md.
"""
import functools

from django.conf import settings
from django.db import connection
from django.http import HttpResponse

from config.local_cache import MISSING, LocalCache

answers = LocalCache("workspace-answers", ttl=settings.WORKSPACE_ANSWERS_TTL_SECONDS, check_setting=None,
                     max_bytes=settings.WORKSPACE_ANSWERS_BYTES)


def _key(view, request):
    workspace, membership = view.workspace, view.membership
    if workspace is None or membership is None or not connection.get_autocommit():  # False in any atomic block
        return None
    actor = view.actor
    return (workspace.pk, workspace.answers_version, request.get_full_path(), request.accepted_media_type,
            membership.role, tuple(sorted(actor.scopes)) if actor is not None else None)


def _store(key, response):
    if response.status_code == 200 and not response.cookies:
        answers.set(key, (response.content, response["Content-Type"]), size=len(response.content) + 200)
    return response


def _kept(key, make, size):
    """`make()`'s value, kept under `key` (`size(value)` characters)."""
    value = answers.get(key)
    if value is MISSING:
        value = make()
        answers.set(key, value, size=size(value) + 200)
    return value


def kept_bytes(view, name, make):
    """`make()`'s bytes, kept as an answer of `view`'s request is (same key, and `name` for what the path does not
    say)."""
    key = _key(view, view.request)
    return make() if key is None else _kept((*key, name), make, len)


def kept_page_part(context: dict, parts: tuple, make, size=len):
    """A dashboard page's part (`make()`'s value, `size(value)` characters), kept as an API answer is: by the
    workspace, its stamp and the member's role (`context` is the page's workspace context), and `parts` for what
    else it rests on (which part, the page and query it shows)."""
    workspace, membership = context["workspace"], context["membership"]
    if not connection.get_autocommit():  # False in any atomic block
        return make()
    return _kept(("page", workspace.pk, workspace.answers_version, membership.role, *parts), make, size)


def kept(handler, keep=None):
    """`handler` (a GET of a PlatformView in a workspace) with its answers kept; `keep(data)` says whether an answer
    may be (default: every 200)."""

    @functools.wraps(handler)
    def answer(view, request, *args, **kwargs):
        key = _key(view, request)
        if key is not None:
            hit = answers.get(key)
            if hit is not MISSING:
                return HttpResponse(hit[0], content_type=hit[1])
        response = handler(view, request, *args, **kwargs)
        if key is not None and response.status_code == 200 and (keep is None or keep(response.data)):
            response.add_post_render_callback(functools.partial(_store, key))
        return response

    return answer
