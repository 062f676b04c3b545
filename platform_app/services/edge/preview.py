"""Preview protection: off, a password, or workspace members only. A verified password sets a signed
cookie scoped to the project."""
from django.conf import settings
from django.contrib.auth.hashers import check_password, make_password
from django.core import signing
from django.db import transaction
from django.http import HttpResponse
from django.utils import timezone
from django.utils.html import escape

from config.errors import Unauthenticated, ValidationFailed
from platform_app.models import Membership, PreviewProtection
from platform_app.services.identity.throttle import Limit, address_key, attempt_admit, attempt_succeeded

SALT = "preview-protection"


def cookie_name(project) -> str:
    return f"svc_preview_{project.pk}"


def protection_of(project) -> PreviewProtection:
    return PreviewProtection.objects.filter(project=project).first() or PreviewProtection(project=project)


@transaction.atomic
def protection_set(*, project, mode: str, password: str | None, actor=None) -> PreviewProtection:
    if mode not in PreviewProtection.Mode.values:
        raise ValidationFailed("mode must be off, password or members.", details={"mode": ["Invalid."]})
    protection, _ = PreviewProtection.objects.select_for_update().get_or_create(project=project)
    if mode == PreviewProtection.Mode.PASSWORD:
        if password:
            if len(password) < 8:
                raise ValidationFailed("password must have at least 8 characters.", details={"password": ["Too short."]})
            protection.password_hash = make_password(password)
        elif not protection.password_hash:
            raise ValidationFailed("password is required to turn password protection on.",
                                   details={"password": ["Required."]})
    protection.mode, protection.updated_at = mode, timezone.now()
    protection.save()
    return protection


def preview_verify(*, project, password: str, ip: str) -> str:
    """Check the password; returns the signed cookie value. Attempts are counted before the check, per
    (project, address) with a hard limit and per project with a slowing ceiling (docs/env.md)."""
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
    return signing.dumps({"project": project.pk}, salt=SALT)


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
        return data.get("project") == project.pk, "password verified"
    return False, "workspace members only"


def preview_gate(request, deployment) -> HttpResponse | None:
    """For the edge: None when the visitor may see this preview deployment, else the page asking to sign in."""
    project = deployment.project
    if deployment.env == "production":
        return None
    allowed, reason = preview_allowed(request, project)
    if allowed:
        return None
    if reason == "password required":
        body = (f"<!doctype html><title>Protected preview</title><h1>{escape(project.name)}: protected preview</h1>"
                f"<form method=post action='/v1/preview-protection/{project.pk}/verify'>"
                "<input type=password name=password placeholder=Password autofocus> <button>View</button></form>")
        return HttpResponse(body, status=401)
    return HttpResponse("<!doctype html><h1>Sign in as a workspace member to view this preview.</h1>", status=401)
