"""Where a page may send a visitor back to after a form (`?next=`): only a path on this site."""
from django.utils.http import url_has_allowed_host_and_scheme


def safe_next(request, default: str) -> str:
    """The `next` of the form or query when it is a same-site path (not `//host`, not `\\`, no scheme), else
    `default`."""
    target = request.POST.get("next") or request.GET.get("next") or ""
    if target.startswith("/") and url_has_allowed_host_and_scheme(
            target, allowed_hosts={request.get_host()}, require_https=request.is_secure()):
        return target
    return default
