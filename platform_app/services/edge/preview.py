"""Preview protection: off, a password, or workspace members only. A verified password sets a signed
cookie scoped to the project and to the password's version. Visitors enter the password on the preview's own
host (`PREVIEW_PATH`, answered by the edge), where the cookie is set; the API's verify sets it on the platform's
host for API clients."""
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib.auth.hashers import check_password, make_password
from django.core import signing
from django.db import transaction
from django.http import HttpResponse, HttpResponseRedirect
from django.utils import timezone
from django.utils.html import escape
from django.utils.http import url_has_allowed_host_and_scheme

from config.errors import RateLimited, Unauthenticated, ValidationFailed
from platform_app.models import Membership, PreviewProtection
from platform_app.services.identity.throttle import Limit, address_key, attempt_admit, attempt_succeeded

SALT = "preview-protection"
PREVIEW_PATH = "/.well-known/svc-preview"  # reserved on every preview host: the edge answers it, not the deployment


def cookie_name(project) -> str:
    return f"svc_preview_{project.pk}"


def protection_of(project) -> PreviewProtection:
    return PreviewProtection.objects.filter(project=project).first() or PreviewProtection(project=project)


@transaction.atomic
def protection_set(*, project, mode: str, password: str | None, actor=None) -> PreviewProtection:
    """A new password, or leaving password mode, bumps `password_version`: the cookies visitors got for the
    old password stop working (they carry the version they were signed with)."""
    if mode not in PreviewProtection.Mode.values:
        raise ValidationFailed("mode must be off, password or members.", details={"mode": ["Invalid."]})
    protection, _ = PreviewProtection.objects.select_for_update().get_or_create(project=project)
    if mode == PreviewProtection.Mode.PASSWORD:
        if password:
            if len(password) < 8:
                raise ValidationFailed("password must have at least 8 characters.", details={"password": ["Too short."]})
            protection.password_hash = make_password(password)
            protection.password_version += 1
        elif not protection.password_hash:
            raise ValidationFailed("password is required to turn password protection on.",
                                   details={"password": ["Required."]})
    elif protection.mode == PreviewProtection.Mode.PASSWORD:
        protection.password_version += 1
    protection.mode, protection.updated_at = mode, timezone.now()
    protection.save()
    return protection


def preview_verify(*, project, password: str, ip: str) -> str:
    """Check the password; returns the signed cookie value (bound to the project and the password's version).
    Attempts are counted before the check, per (project, address) with a hard limit and per project with a
    slowing ceiling (docs/env.md)."""
    window = settings.PREVIEW_ATTEMPT_WINDOW_SECONDS
    admission = attempt_admit(limits=[
        Limit(f"preview:pair:{project.pk}|{address_key(ip)}", settings.PREVIEW_ATTEMPTS_PER_WINDOW, window,
              reset_on_success=True),
        Limit(f"preview:project:{project.pk}", settings.PREVIEW_ATTEMPTS_PER_PROJECT, window, slow=True),
    ], message="Too many password attempts; try again later.")
    protection = protection_of(project)
    if protection.mode != PreviewProtection.Mode.PASSWORD or not check_password(password, protection.password_hash):
        raise Unauthenticated("Wrong password.", code="invalid_password")
    attempt_succeeded(admission=admission)
    return signing.dumps({"project": project.pk, "v": protection.password_version}, salt=SALT)


def preview_allowed(request, project) -> tuple[bool, str]:
    """(allowed, reason) for the visitor of a preview deployment."""
    protection = protection_of(project)
    if protection.mode == PreviewProtection.Mode.OFF:
        return True, "not protected"
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated and Membership.objects.filter(
            workspace=project.workspace, user=user).exists():
        return True, "workspace member"
    if protection.mode == PreviewProtection.Mode.PASSWORD:
        try:
            data = signing.loads(request.COOKIES.get(cookie_name(project), ""), salt=SALT,
                                 max_age=settings.PREVIEW_COOKIE_MAX_AGE)
        except signing.BadSignature:
            return False, "password required"
        if data != {"project": project.pk, "v": protection.password_version}:
            return False, "password required"  # another project's cookie, or one for an older password
        return True, "password verified"
    return False, "workspace members only"


# The visitor's side, on the preview's own host (the edge) ---------------------------------------------

def _local(target) -> str:
    """`target` when it is a path on this host, else `/` (never another site)."""
    if (not isinstance(target, str) or not target.startswith("/") or target.startswith(("//", "/\\"))
            or not url_has_allowed_host_and_scheme(target, allowed_hosts=None)):
        return "/"
    return target


def _password_page(project, next_path: str, *, status: int, error: str = "") -> HttpResponse:
    alert = f"<p role=alert>{escape(error)}</p>" if error else ""
    body = ("<!doctype html><html lang=en><head><meta charset=utf-8><title>Protected preview</title>"
            "<meta name=robots content=noindex></head><body><main>"
            f"<h1>{escape(project.name)}: protected preview</h1>{alert}"
            f"<form method=post action='{PREVIEW_PATH}'>"
            f"<input type=hidden name=next value='{escape(next_path)}'>"
            "<label for=svc-preview-password>Password</label> "
            "<input type=password id=svc-preview-password name=password autocomplete=current-password required "
            "autofocus> <button type=submit>View</button></form></main></body></html>")
    response = HttpResponse(body, status=status, content_type="text/html; charset=utf-8")
    response["Cache-Control"] = "no-store"
    return response


def _same_origin(request) -> bool:
    """A form post from a page of this host: `Origin` (or, without it, `Referer`) names the request's own host.
    Browsers send `Origin` with every form post, so another site's form is refused; so is a post naming neither."""
    fetch_site = request.headers.get("Sec-Fetch-Site")
    if fetch_site and fetch_site not in ("same-origin", "none"):
        return False
    source = request.headers.get("Origin") or request.headers.get("Referer") or ""
    try:
        netloc = urlsplit(source).netloc.lower()
    except ValueError:
        return False
    return bool(netloc) and netloc == request.META.get("HTTP_HOST", "").lower()


def preview_answer(request, deployment, *, ip: str) -> HttpResponse:
    """PREVIEW_PATH on a preview deployment's host. GET: the password form (or straight back to `next` when the
    visitor may already pass). POST (`password`, `next`): same-origin only (403 otherwise), attempts counted as
    `preview_verify` counts them (401 with the form again, 429 past the limit); the right password sets the
    cookie on this host and answers 303 to `next`."""
    project = deployment.project
    if request.method in ("GET", "HEAD"):
        next_path = _local(request.GET.get("next", "/"))
        allowed, reason = preview_allowed(request, project)
        if allowed:
            return HttpResponseRedirect(next_path)
        if reason != "password required":
            return _members_page()
        return _password_page(project, next_path, status=200)
    if request.method != "POST":
        return HttpResponse("Method not allowed", status=405, content_type="text/plain", headers={"Allow": "GET, POST"})
    if not _same_origin(request):
        return HttpResponse("Cross-site form posts are refused.", status=403, content_type="text/plain",
                            headers={"Cache-Control": "no-store"})
    next_path = _local(request.POST.get("next", "/"))
    try:
        value = preview_verify(project=project, password=request.POST.get("password", ""), ip=ip)
    except RateLimited as exc:
        return HttpResponse(exc.message, status=429, content_type="text/plain",
                            headers={**exc.headers, "Cache-Control": "no-store"})
    except Unauthenticated:
        return _password_page(project, next_path, status=401, error="Wrong password.")
    response = HttpResponseRedirect(next_path, status=303)
    response.set_cookie(cookie_name(project), value, max_age=settings.PREVIEW_COOKIE_MAX_AGE, httponly=True,
                        samesite="Lax", secure=request.is_secure())
    response["Cache-Control"] = "no-store"
    return response


def _members_page() -> HttpResponse:
    return HttpResponse("<!doctype html><html lang=en><head><meta charset=utf-8><title>Members only</title></head>"
                        "<body><h1>Sign in as a workspace member to view this preview.</h1></body></html>",
                        status=401, content_type="text/html; charset=utf-8")


def preview_gate(request, deployment) -> HttpResponse | None:
    """For the edge: None when the visitor may see this preview deployment, else the page asking for the password
    (its form posts to PREVIEW_PATH on this host and comes back here) or to sign in."""
    project = deployment.project
    if deployment.env == "production":
        return None
    allowed, reason = preview_allowed(request, project)
    if allowed:
        return None
    if reason == "password required":
        return _password_page(project, _local(request.get_full_path()), status=401)
    return _members_page()
