"""Which channels a send tries, in order: the workspace's rule for the recipient's country,
else its `*` rule, else the default in settings; live keys only get configured channels."""
import idna
import phonenumbers
from django.conf import settings
from django.core.validators import validate_email
from django.core.exceptions import ValidationError as DjangoValidationError

from otp_app import channels
from otp_app.models import CHANNELS, RoutingRule, WorkspacePolicy
from otp_app.services.config_cache import config
from otp_app.services.errors import CountryNotAllowed, NoChannel, ValidationFailed
from otp_app.services.number_types import number_type_check


def recipient_kind(recipient: str) -> str:
    return "email" if "@" in recipient else "phone"


def phone_normalize(recipient: str, allowed_types: list[str]) -> tuple[str, str]:
    """E.164 and its ISO country; 400 `invalid_recipient` otherwise, 422 `recipient_not_allowed` for a number
    type refused by default and not in `allowed_types` (otp_app/services/number_types.py)."""
    if not recipient.startswith("+"):
        raise ValidationFailed("recipient must be an E.164 number with a leading + (or an email for the email channel).",
                               code="invalid_recipient")
    try:
        number = phonenumbers.parse(recipient, None)
    except phonenumbers.NumberParseException:
        number = None
    # a number's type is what is_valid_number works out (UNKNOWN: not valid), so one look answers both
    kind = phonenumbers.number_type(number) if number is not None else phonenumbers.PhoneNumberType.UNKNOWN
    if kind == phonenumbers.PhoneNumberType.UNKNOWN:
        raise ValidationFailed("recipient is not a valid E.164 phone number.", code="invalid_recipient")
    number_type_check(number, kind, allowed=allowed_types)
    return (phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.E164),
            phonenumbers.region_code_for_number(number) or "")


def recipient_normalize(recipient: str, channel: str | None, *, allowed_types: list[str] = ()) -> tuple[str, str]:
    """(normalized recipient, country or ''). `allowed_types`: the number types refused by default that the
    sending key may reach."""
    recipient = (recipient or "").strip()
    if channel == "email" or (channel is None and recipient_kind(recipient) == "email"):
        return email_normalize(recipient), ""
    return phone_normalize(recipient, list(allowed_types))


def email_normalize(recipient: str) -> str:
    """One spelling per mailbox, so that it keys one limit and one block: the local part lower-cased, the domain
    as its IDNA (UTS 46) ASCII form, lower-case (`idn@Bücher.example` → `idn@xn--bcher-kva.example`)."""
    try:
        validate_email(recipient)
        local, _, domain = recipient.rpartition("@")
        domain = domain.lower() if _plain_ascii(domain) else idna.encode(domain, uts46=True).decode("ascii").lower()
    except (DjangoValidationError, idna.IDNAError, UnicodeError):
        raise ValidationFailed("recipient is not a valid email address.", code="invalid_recipient")
    return f"{local.lower()}@{domain}"


def _plain_ascii(domain: str) -> bool:
    """A domain IDNA would only lower-case (ASCII letters, digits and hyphens, no `xn--` or other `??--` label to
    check): most addresses, spared the idna library's label checks."""
    return domain.isascii() and all(label[2:4] != "--" for label in domain.split("."))


def _policy(workspace) -> WorkspacePolicy | None:
    try:
        return workspace.otp_policy  # loaded with the API key when authenticated, else one query
    except WorkspacePolicy.DoesNotExist:
        return None


def _rules(workspace) -> dict[str, list[str]]:
    """The workspace's rules by country, from the process cache (a rule's save or delete invalidates it)."""
    return config.get_or_compute(("routes", workspace.pk), lambda: dict(
        RoutingRule.objects.filter(workspace=workspace).values_list("country", "channels")))


def route_for(*, workspace, mode: str, recipient: str, country: str, channel: str | None) -> list[str]:
    policy = _policy(workspace)
    if country and policy and policy.allowed_countries and country not in policy.allowed_countries:
        raise CountryNotAllowed(f"Sending to {country} is not allowed for this workspace.")
    if channel is not None:
        if channel not in CHANNELS:
            raise ValidationFailed(f"Unknown channel; use one of {', '.join(CHANNELS)}.", code="invalid_channel")
        if (channel == "email") != (recipient_kind(recipient) == "email"):
            raise ValidationFailed(f"The {channel} channel cannot reach this recipient.", code="invalid_recipient")
        if mode == "live" and not channels.configured(channel):
            raise NoChannel(f"The {channel} channel is not configured.", code="channel_not_configured")
        return [channel]
    if recipient_kind(recipient) == "email":
        wanted = ["email"]
    else:
        rules = _rules(workspace)
        defaults = settings.OTP_DEFAULT_ROUTES
        wanted = rules.get(country) or rules.get("*") or defaults.get(country) or defaults.get("*", [])
        wanted = [c for c in wanted if c != "email"]
    route = [c for c in wanted if c in CHANNELS and (mode == "test" or channels.configured(c))]
    if not route:
        raise NoChannel()
    return list(dict.fromkeys(route))
