"""Fixtures of the billing tests: the payments provider as a local server speaking Stripe's wire format, and a
billing member of `acme`."""
import pytest

from tests.factories import MembershipFactory, UserFactory
from tests.platform_app.billing.fake_stripe import API_KEY, WEBHOOK_SECRET, FakeStripe


@pytest.fixture
def stripe_server(httpserver, settings):
    """The payments provider configured and pointed at the local server; `.url`, `.requests()`, state dicts."""
    fake = FakeStripe(httpserver)
    settings.PAYMENTS_API_KEY = API_KEY
    settings.PAYMENTS_API_BASE = fake.url
    settings.PAYMENTS_WEBHOOK_SECRET = WEBHOOK_SECRET
    settings.PAYMENTS_MAX_NETWORK_RETRIES = 0
    settings.PAYMENTS_TIMEOUT_SECONDS = 5
    settings.BILLING_PLAN_PRICE_IDS = {"pro": "price_pro_monthly", "enterprise": ""}
    return fake


@pytest.fixture
def betty(workspace):
    """A billing member of acme."""
    user = UserFactory(email="betty@example.com", name="Betty")
    MembershipFactory(workspace=workspace, user=user, role="billing")
    return user
