"""The OTP error codes of contract.md, as ApplicationError subclasses."""
from config.errors import ApplicationError, Conflict, NotFound, RateLimited, Unauthenticated, ValidationFailed  # noqa: F401


class InsufficientBalance(ApplicationError):
    status, code, default_message = 402, "insufficient_balance", "The balance is too low for this send."


class SandboxOnly(ApplicationError):
    status, code, default_message = 403, "sandbox_only", "The sandbox outbox is for test keys only."


class CountryNotAllowed(ApplicationError):
    status, code, default_message = 403, "country_not_allowed", "Sending to this country is not allowed."


class NoChannel(ApplicationError):
    status, code, default_message = 422, "no_channel_available", "No configured channel can reach this recipient."


class RecipientNotAllowed(ApplicationError):
    status, code, default_message = 422, "recipient_not_allowed", "Codes are not sent to this type of number."
