"""Email through Django's email backend (SMTP in production)."""
from django.conf import settings
from django.core.mail import EmailMessage

from otp_app.channels.base import Channel, ChannelError, Message


class EmailChannel(Channel):
    name = "email"
    phone = False

    def is_configured(self) -> bool:
        return settings.OTP_EMAIL_ENABLED

    def send(self, message: Message) -> str:
        email = EmailMessage(subject=message.subject, body=message.text, from_email=settings.OTP_EMAIL_FROM,
                             to=[message.recipient])
        try:
            email.send(fail_silently=False)
        except (OSError, Exception) as exc:  # smtplib errors derive from OSError; backends vary
            raise ChannelError(f"SMTP delivery failed: {exc.__class__.__name__}: {exc}", retryable=True)
        return email.extra_headers.get("Message-ID", "") or "smtp"
