"""What every channel adapter provides."""
from dataclasses import dataclass


class ChannelError(Exception):
    """A provider refused or failed. `retryable` for transient failures (timeouts, 429, 5xx)."""

    def __init__(self, message: str, *, retryable: bool = False):
        super().__init__(message)
        self.retryable = retryable


@dataclass
class Message:
    recipient: str
    code: str
    text: str
    subject: str
    locale: str
    callback_url: str = ""


class Channel:
    name = ""
    phone = True  # recipient is an E.164 number

    def is_configured(self) -> bool:
        raise NotImplementedError

    def send(self, message: Message) -> str:
        """Deliver; return the provider's message id. Raise ChannelError on failure."""
        raise NotImplementedError


def http_error(exc_or_response, provider: str) -> ChannelError:
    """Map an httpx failure to a ChannelError, retryable when the provider may succeed later."""
    import httpx

    if isinstance(exc_or_response, httpx.HTTPError):
        return ChannelError(f"{provider} unreachable: {exc_or_response.__class__.__name__}", retryable=True)
    resp = exc_or_response
    retryable = resp.status_code == 429 or resp.status_code >= 500
    return ChannelError(f"{provider} answered {resp.status_code}: {resp.text[:200]}", retryable=retryable)
