"""Dashboard pages kept whole for a member, as the API keeps its answers (platform_app/api/kept.py).

A page is kept by the workspace, its answer stamp, name and slug, the member's role, the user and their address,
the full path and whether htmx asked for it, only outside a transaction, for a GET with no message waiting to be
shown. The member's own CSRF token and workspace switcher go in slots (config/kept_pages.py), filled on each
request. The access check runs on every request, kept or not. What the stamp does not follow stays as the page was
kept for the answers' TTL at most: who started a build, by address. Figures: docs/performance.md.
"""
from django.contrib.messages.storage.cookie import CookieStorage
from django.contrib.messages.storage.session import SessionStorage
from django.db import connection

from config import kept_pages
from config.local_cache import MISSING
from platform_app.api.kept import answers
from platform_app.templatetags.dashboard import SWITCHER_SLOT, workspace_options_html


def _messages_waiting(request) -> bool:
    # a cookie a page emptied is sent empty by a client that keeps it
    return bool(request.COOKIES.get(CookieStorage.cookie_name)) or SessionStorage.session_key in request.session


def kept_page(request, context: dict, render, keep: bool = True):
    """`render()`'s page, kept whole (`keep`: whether what it shows is all the stamp follows)."""
    if not keep or request.method != "GET" or not connection.get_autocommit() or _messages_waiting(request):
        return render()
    workspace, user = context["workspace"], request.user
    key = ("whole page", workspace.pk, workspace.answers_version, workspace.slug, workspace.name,
           context["membership"].role, user.pk, user.email, request.get_full_path(), bool(request.htmx))
    kept = answers.get(key)
    if kept is MISSING:
        response, kept = kept_pages.render_kept(request, render)
        if kept is None:
            return response
        answers.set(key, kept, size=kept_pages.kept_size(kept))
    return kept_pages.fill(request, kept, {SWITCHER_SLOT: lambda: workspace_options_html(user, workspace)})
