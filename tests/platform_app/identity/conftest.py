"""Helpers for the attempt-limit tests: a frozen clock, clients from given addresses, concurrent races."""
import time
from datetime import UTC, datetime

import pytest
from rest_framework.test import APIClient

from platform_app.models import AttemptCounter
from tests.conftest import at_once
from tests.factories import PASSWORD

STRANGER, OWNER = "203.0.113.5", "198.51.100.7"


@pytest.fixture
def clock(time_machine):
    """The clock frozen just after a window boundary (every window in these tests divides an hour)."""
    start = (int(time.time()) // 3600 + 1) * 3600 + 1
    time_machine.move_to(datetime.fromtimestamp(start, tz=UTC), tick=False)
    return start


def client_from(address: str) -> APIClient:
    return APIClient(REMOTE_ADDR=address)


def sign_in(client, email, password=PASSWORD, headers=None, **body):
    return client.post("/v1/auth/sign-in", {"email": email, "password": password, **body}, format="json",
                       **(headers or {}))


def counted(key: str) -> int:
    row = AttemptCounter.objects.filter(key=key).first()
    return row.count if row else 0


def race(n: int, address: str, attempt) -> list[int]:
    """`attempt(client)` from n threads at once, each with its own client (and database connection)."""
    return at_once(lambda: attempt(client_from(address)).status_code, n)
