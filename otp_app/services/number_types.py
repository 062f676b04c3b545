"""Phone number types that carriers block by default and that a send refuses unless staff allow the type for the
key (`ApiKey.allowed_number_types`, in the admin): premium rate and shared cost (the caller pays the number's
owner), personal numbers and UANs (forwarding numbers that hide who answers), and satellite numbers (a message
costs many times a mobile one)."""
import phonenumbers
from phonenumbers import PhoneNumberType

from otp_app.services.errors import RecipientNotAllowed

BY_PHONENUMBERS_TYPE = {
    PhoneNumberType.PREMIUM_RATE: "premium_rate",
    PhoneNumberType.SHARED_COST: "shared_cost",
    PhoneNumberType.PERSONAL_NUMBER: "personal_number",
    PhoneNumberType.UAN: "uan",
}
SATELLITE = "satellite"
REFUSED = (*BY_PHONENUMBERS_TYPE.values(), SATELLITE)
# phonenumbers calls these MOBILE: Inmarsat (+870), the satellite systems of +881 (Iridium +8816/7, Globalstar
# +8818/9, ...) and Thuraya (+88216)
_SATELLITE_PREFIXES = ("870", "881", "88216")


def refused_type(number: phonenumbers.PhoneNumber, kind: int) -> str | None:
    """The refused type of a valid number whose phonenumbers type is `kind`, or None."""
    if f"{number.country_code}{number.national_number}".startswith(_SATELLITE_PREFIXES):
        return SATELLITE
    return BY_PHONENUMBERS_TYPE.get(kind)


def number_type_check(number: phonenumbers.PhoneNumber, kind: int, *, allowed: list[str]) -> None:
    """422 `recipient_not_allowed`, naming the type, for a number of a refused type not in `allowed` (the key's)."""
    refused = refused_type(number, kind)
    if refused is not None and refused not in allowed:
        raise RecipientNotAllowed(f"Codes are not sent to {refused.replace('_', ' ')} numbers ({refused}).")
