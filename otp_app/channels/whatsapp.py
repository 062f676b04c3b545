"""WhatsApp Cloud API: an authentication template with the code in the body and a copy-code button."""
from django.conf import settings

from otp_app.channels.base import Channel, Message, http_error


class WhatsAppChannel(Channel):
    name = "whatsapp"

    def is_configured(self) -> bool:
        return bool(settings.WHATSAPP_PHONE_NUMBER_ID and settings.WHATSAPP_ACCESS_TOKEN)

    def payload(self, message: Message) -> dict:
        return {
            "messaging_product": "whatsapp",
            "recipient_type": "individual",
            "to": message.recipient.lstrip("+"),
            "type": "template",
            "template": {
                "name": settings.WHATSAPP_TEMPLATE,
                "language": {"code": message.locale.replace("-", "_")},
                "components": [
                    {"type": "body", "parameters": [{"type": "text", "text": message.code}]},
                    {"type": "button", "sub_type": "url", "index": "0",
                     "parameters": [{"type": "text", "text": message.code}]},
                ],
            },
        }

    def send(self, message: Message) -> str:
        import httpx

        url = (f"{settings.WHATSAPP_BASE_URL.rstrip('/')}/{settings.WHATSAPP_API_VERSION}/"
               f"{settings.WHATSAPP_PHONE_NUMBER_ID}/messages")
        try:
            resp = httpx.post(url, json=self.payload(message), timeout=settings.OTP_PROVIDER_TIMEOUT_SECONDS,
                              headers={"Authorization": f"Bearer {settings.WHATSAPP_ACCESS_TOKEN}"})
        except httpx.HTTPError as exc:
            raise http_error(exc, "WhatsApp")
        if resp.status_code != 200:
            raise http_error(resp, "WhatsApp")
        messages = resp.json().get("messages") or [{}]
        return messages[0].get("id", "")
