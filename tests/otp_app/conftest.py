import pytest
from rest_framework.test import APIClient

from tests.otp_app.factories import ApiKeyFactory, BalanceFactory

PHONE = "+14155550123"  # a valid US number


class OtpClient(APIClient):
    """Runs on-commit callbacks (the delivery task) as a real request would."""

    capture = None

    def generic(self, *args, **kwargs):
        with self.capture(execute=True):
            return super().generic(*args, **kwargs)


def _client(raw, capture):
    client = OtpClient()
    client.capture = capture
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


@pytest.fixture
def key_client(db, workspace, django_capture_on_commit_callbacks):
    """`key_client(mode="test"|"live")` → (client, ApiKey)."""

    def make(mode="test", ws=None):
        raw = f"svc_{mode}_" + ApiKeyFactory._meta.model.objects.count().__str__().zfill(4) + "q" * 30
        key = ApiKeyFactory(workspace=ws or workspace, mode=mode, raw=raw)
        return _client(raw, django_capture_on_commit_callbacks), key

    return make


@pytest.fixture
def sandbox(key_client):
    return key_client("test")


@pytest.fixture
def funded(workspace):
    return BalanceFactory(workspace=workspace, amount=1000, currency="USD")
