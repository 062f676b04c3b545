"""TOTP factors with django-otp: enrol, confirm, delete, check at sign-in."""
import base64
import io

import qrcode
import qrcode.image.svg
from django.conf import settings
from django.db import transaction
from django_otp.plugins.otp_totp.models import TOTPDevice

from config.errors import NotFound, Unauthenticated, ValidationFailed
from config.inputs import ascii_int
from platform_app.services.identity.throttle import Admission, Limit, address_key, attempt_admit, attempt_succeeded


def factors_confirmed(user):
    return TOTPDevice.objects.filter(user=user, confirmed=True)


def factor_get(*, user, factor_id) -> TOTPDevice:
    pk = ascii_int(str(factor_id).removeprefix("totp_"), max_digits=18)  # a 64-bit id, or no factor at all
    device = TOTPDevice.objects.filter(user=user, pk=pk).first() if pk is not None and pk >= 0 else None
    if device is None:
        raise NotFound("No such MFA factor.")
    return device


def factor_id(device: TOTPDevice) -> str:
    return f"totp_{device.pk}"


def _otpauth_uri(device: TOTPDevice) -> str:
    # django-otp's config_url names the issuer from OTP_TOTP_ISSUER.
    return device.config_url


def _qr_svg_data_uri(uri: str) -> str:
    img = qrcode.make(uri, image_factory=qrcode.image.svg.SvgPathImage)
    buf = io.BytesIO()
    img.save(buf)
    return "data:image/svg+xml;base64," + base64.b64encode(buf.getvalue()).decode()


@transaction.atomic
def totp_enrol_start(*, user, name: str = "Authenticator") -> dict:
    """A new unconfirmed factor: its secret, otpauth URI and a QR code."""
    TOTPDevice.objects.filter(user=user, confirmed=False).delete()  # one pending enrolment at a time
    device = TOTPDevice.objects.create(user=user, name=name[:64] or "Authenticator", confirmed=False)
    secret = base64.b32encode(device.bin_key).decode().rstrip("=")
    uri = _otpauth_uri(device)
    return {"device": device, "secret": secret, "otpauth_uri": uri, "qr_code": _qr_svg_data_uri(uri)}


def _verify(device: TOTPDevice, code: str) -> bool:
    code = (code or "").strip()
    if not (code.isdigit() and len(code) == device.digits):
        return False
    return device.verify_token(code)


def totp_enrol_confirm(*, user, factor_id: str | None, code: str, ip: str = "") -> TOTPDevice:
    # the attempt is counted in its own transaction first: a wrong code must not roll the count back
    if _pending(user=user, factor_id=factor_id).first() is None:
        raise NotFound("No pending TOTP enrolment; start one first.")
    admission = code_attempt_admit(user=user, ip=ip)
    device = _confirm(user=user, factor_id=factor_id, code=code)
    if device is None:
        raise ValidationFailed("The code is not valid.", code="invalid_code", details={"code": ["Invalid code."]})
    attempt_succeeded(admission=admission)
    return device


def _pending(*, user, factor_id: str | None):
    qs = TOTPDevice.objects.filter(user=user, confirmed=False)
    if factor_id:
        return qs.filter(pk=factor_get(user=user, factor_id=factor_id).pk)
    return qs.order_by("-pk")


@transaction.atomic
def _confirm(*, user, factor_id: str | None, code: str) -> TOTPDevice | None:
    device = _pending(user=user, factor_id=factor_id).select_for_update().first()
    if device is None:
        raise NotFound("No pending TOTP enrolment; start one first.")
    if not _verify(device, code):
        return None
    device.confirmed = True
    device.save(update_fields=["confirmed"])
    return device


def factor_delete(*, user, factor_id: str) -> None:
    factor_get(user=user, factor_id=factor_id).delete()


def code_attempt_admit(*, user, ip: str) -> Admission:
    """Count an MFA code attempt before checking it, with the sign-in rule (docs/auth.md); 429 past a limit."""
    addr, window = address_key(ip), settings.AUTH_FAILURE_WINDOW_SECONDS
    return attempt_admit(limits=[
        Limit(f"mfa:pair:{user.pk}|{addr}", settings.AUTH_FAILURES_PER_ACCOUNT_AND_IP, window, reset_on_success=True),
        Limit(f"mfa:acct:{user.pk}", settings.AUTH_FAILURES_PER_ACCOUNT, window, slow=True),
        Limit(f"mfa:ip:{addr}", settings.AUTH_FAILURES_PER_IP, window),
    ], message="Too many wrong codes; try again later.")


def sign_in_second_factor(*, user, totp_code: str | None, ip: str = "") -> None:
    """An account with a confirmed factor needs a valid current code."""
    devices = list(factors_confirmed(user))
    if not devices:
        return
    if not totp_code:
        raise Unauthenticated("This account requires a TOTP code (totpCode).", code="mfa_required")
    admission = code_attempt_admit(user=user, ip=ip)
    if not any(_verify(d, totp_code) for d in devices):
        raise Unauthenticated("The TOTP code is not valid.", code="invalid_totp")
    attempt_succeeded(admission=admission)
