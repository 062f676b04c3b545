"""Email through Django's email backend (SMTP in production)."""
from email.utils import make_msgid, parseaddr

from django.conf import settings
from django.core.mail import EmailMessage
from django.core.mail.utils import DNS_NAME

from otp_app.channels.base import Channel, ChannelError, Message


class EmailChannel(Channel):
    name = "email"
    phone = False

    def is_configured(self) -> bool:
        return settings.OTP_EMAIL_ENABLED

    def send(self, message: Message) -> str:
        # the Message-ID is ours, so the delivery records what the mail carries (Django would make one unseen)
        domain = parseaddr(settings.OTP_EMAIL_FROM)[1].rpartition("@")[2] or str(DNS_NAME)
        email = EmailMessage(subject=message.subject, body=message.text, from_email=settings.OTP_EMAIL_FROM,
                             to=[message.recipient], headers={"Message-ID": make_msgid(domain=domain)})
        try:
            email.send(fail_silently=False)
        except (OSError, Exception) as exc:  # smtplib errors derive from OSError; backends vary
            raise ChannelError(f"SMTP delivery failed: {exc.__class__.__name__}: {exc}", retryable=True)
        return email.extra_headers["Message-ID"]
