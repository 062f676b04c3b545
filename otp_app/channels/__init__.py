"""Channel adapters: one module per provider, each speaking that provider's wire format.

`registry()` maps channel name → adapter; `configured(name)` says whether it may be picked.
"""
from otp_app.channels.base import Channel, ChannelError  # noqa: F401


def registry() -> dict:
    from otp_app.channels.console import ConsoleChannel
    from otp_app.channels.email import EmailChannel
    from otp_app.channels.twilio_sms import TwilioSmsChannel
    from otp_app.channels.whatsapp import WhatsAppChannel

    return {c.name: c for c in (WhatsAppChannel(), TwilioSmsChannel(), EmailChannel(), ConsoleChannel())}


def get(name: str) -> "Channel":
    return registry()[name]


def configured(name: str) -> bool:
    adapter = registry().get(name)
    return adapter is not None and adapter.is_configured()
