"""Typed responses of the OTP API."""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime


def _dt(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value.replace("Z", "+00:00")) if value else None


@dataclass(frozen=True)
class Delivery:
    channel: str
    status: str
    at: datetime | None
    error: str

    @classmethod
    def from_json(cls, data: dict) -> Delivery:
        return cls(channel=data["channel"], status=data["status"], at=_dt(data.get("at")), error=data.get("error", ""))


@dataclass(frozen=True)
class OtpRecord:
    id: str
    channel: str
    status: str
    recipient: str
    locale: str
    expires_at: datetime | None
    attempts_left: int
    sends: int = 1
    mode: str = ""
    created_at: datetime | None = None
    verified_at: datetime | None = None
    delivery: list[Delivery] = field(default_factory=list)

    @classmethod
    def from_json(cls, data: dict) -> OtpRecord:
        return cls(id=data["id"], channel=data["channel"], status=data["status"], recipient=data.get("recipient", ""),
                   locale=data.get("locale", ""), expires_at=_dt(data.get("expires_at")),
                   attempts_left=data["attempts_left"], sends=data.get("sends", 1), mode=data.get("mode", ""),
                   created_at=_dt(data.get("created_at")), verified_at=_dt(data.get("verified_at")),
                   delivery=[Delivery.from_json(d) for d in data.get("delivery", [])])


@dataclass(frozen=True)
class VerifyResult:
    id: str
    verified: bool
    status: str
    attempts_left: int

    @classmethod
    def from_json(cls, data: dict) -> VerifyResult:
        return cls(id=data["id"], verified=data["verified"], status=data["status"], attempts_left=data["attempts_left"])


@dataclass(frozen=True)
class ChannelConsumption:
    messages: int
    amount: int


@dataclass(frozen=True)
class Balance:
    currency: str
    balance: int
    mode: str
    consumption: dict[str, ChannelConsumption]

    @classmethod
    def from_json(cls, data: dict) -> Balance:
        return cls(currency=data["currency"], balance=data["balance"], mode=data["mode"],
                   consumption={k: ChannelConsumption(**v) for k, v in data.get("consumption", {}).items()})


@dataclass(frozen=True)
class SandboxMessage:
    otp_id: str
    channel: str
    recipient: str
    text: str
    code: str
    created_at: datetime | None

    @classmethod
    def from_json(cls, data: dict) -> SandboxMessage:
        return cls(otp_id=data["otp_id"], channel=data["channel"], recipient=data["recipient"], text=data["text"],
                   code=data["code"], created_at=_dt(data.get("created_at")))
