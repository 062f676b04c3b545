"""Development channel: writes the message to the log instead of sending it."""
import logging

from django.conf import settings

from otp_app.channels.base import Channel, Message

log = logging.getLogger("otp.console")


class ConsoleChannel(Channel):
    name = "console"

    def is_configured(self) -> bool:
        return settings.OTP_CONSOLE_CHANNEL

    def send(self, message: Message) -> str:
        log.warning("OTP to %s: %s", message.recipient, message.text)
        return "console"
