"""SMS through Twilio's Messages REST API (form-encoded, basic auth, status callbacks)."""
import base64
import hashlib
import hmac

from django.conf import settings

from otp_app.channels.base import Channel, ChannelError, Message, http_error


class TwilioSmsChannel(Channel):
    name = "sms"

    def is_configured(self) -> bool:
        return bool(settings.TWILIO_ACCOUNT_SID and settings.TWILIO_AUTH_TOKEN
                    and (settings.TWILIO_FROM or settings.TWILIO_MESSAGING_SERVICE_SID))

    def send(self, message: Message) -> str:
        import httpx

        sid = settings.TWILIO_ACCOUNT_SID
        form = {"To": message.recipient, "Body": message.text}
        if settings.TWILIO_MESSAGING_SERVICE_SID:
            form["MessagingServiceSid"] = settings.TWILIO_MESSAGING_SERVICE_SID
        else:
            form["From"] = settings.TWILIO_FROM
        if message.callback_url:
            form["StatusCallback"] = message.callback_url
        url = f"{settings.TWILIO_BASE_URL.rstrip('/')}/2010-04-01/Accounts/{sid}/Messages.json"
        try:
            resp = httpx.post(url, data=form, auth=(sid, settings.TWILIO_AUTH_TOKEN),
                              timeout=settings.OTP_PROVIDER_TIMEOUT_SECONDS)
        except httpx.HTTPError as exc:
            raise http_error(exc, "Twilio")
        if resp.status_code not in (200, 201):
            raise http_error(resp, "Twilio")
        body = resp.json()
        if body.get("status") in ("failed", "undelivered"):
            raise ChannelError(f"Twilio refused the message: {body.get('error_message') or body.get('status')}")
        return body.get("sid", "")


def twilio_signature(url: str, params: dict, auth_token: str) -> str:
    """X-Twilio-Signature: base64 HMAC-SHA1 of the URL followed by each POST param (sorted) name+value."""
    payload = url + "".join(f"{k}{params[k]}" for k in sorted(params))
    return base64.b64encode(hmac.new(auth_token.encode(), payload.encode(), hashlib.sha1).digest()).decode()
