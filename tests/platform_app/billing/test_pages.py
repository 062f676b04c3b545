"""The Cost and Billing tabs of a workspace: what they show, the forms and buttons each role gets, the card
element's place without the provider's script, and bad input (Django's test client)."""
import re
from datetime import timedelta

import pytest
from django.utils import timezone

from platform_app.models import BillingAccount, TaxId
from platform_app.services.billing.meters import period_bounds
from tests.factories import MembershipFactory, UserFactory
from tests.platform_app.agents.factories import AgentNodeFactory, InstanceFactory
from tests.platform_app.billing.factories import InvoiceFactory, UsageRecordFactory
from tests.platform_app.deployments.factories import DeploymentFactory
from tests.platform_app.projects.factories import ProjectFactory
from tests.platform_app.resources.factories import ComponentFactory

pytestmark = pytest.mark.django_db

COST, BILLING = "/dashboard/acme/cost/", "/dashboard/acme/billing/"


@pytest.fixture
def owner(client, alice):
    client.force_login(alice)
    return client


def no_inline_script(html: str) -> bool:
    return not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", html)


def test_cost_page_shows_categories_projects_bars_and_recommendations(owner, workspace):
    project = ProjectFactory(workspace=workspace, name="Shop")
    start, _ = period_bounds(timezone.now())
    UsageRecordFactory(project=project, hour=start, meter="build_seconds", quantity=60 * 1234)
    node = AgentNodeFactory(workspace=workspace)
    deployment = DeploymentFactory(project=project, env="production", status="ready")
    component = ComponentFactory(project=project, name="api", instance_size="pro", deployment=deployment,
                                 created_at=timezone.now() - timedelta(days=1))
    InstanceFactory(deployment=deployment, node=node, component=component, status="running",
                    memory_peak_bytes=50 * 1024 * 1024)
    resp = owner.get(COST)
    assert resp.status_code == 200
    html = resp.content.decode()
    assert '<a href="/dashboard/acme/cost/" aria-current="page">Cost</a>' in html
    assert 'id="cost-total">12.34 USD<' in html and "Forecast to the end of the period" in html
    assert html.count("<rect ") >= 6 and "Build minutes: 12.34 USD" in html  # server-drawn bars with their values
    assert "Shop" in html and "oversized_instance" in html and "65.70 USD" in html
    assert no_inline_script(html)


def test_every_member_reads_cost_only_billing_roles_see_billing(client, workspace, bob, alice):
    client.force_login(bob)
    html = client.get(COST).content.decode()
    assert "Cost</a>" in html and "/dashboard/acme/billing/" not in html
    assert client.get(BILLING).status_code == 403
    assert client.post(BILLING, {"action": "usage-cap", "amount": "0"}).status_code == 403
    assert not BillingAccount.objects.exists()
    client.force_login(alice)
    assert "/dashboard/acme/billing/" in client.get(COST).content.decode()
    outsider = UserFactory()
    MembershipFactory(user=outsider)
    client.force_login(outsider)
    assert client.get(COST).status_code == 404


def test_billing_page_without_a_provider_says_so_and_sets_the_cap(client, workspace, settings):
    settings.PAYMENTS_API_KEY = ""
    member = UserFactory(email="billy@example.com")
    MembershipFactory(workspace=workspace, user=member, role="billing")
    client.force_login(member)
    InvoiceFactory(workspace=workspace, number="INV-7")
    html = client.get(BILLING).content.decode()
    assert "not configured" in html and "PAYMENTS_API_KEY" in html and "INV-7" in html
    assert "Add a card" not in html and no_inline_script(html)
    resp = client.post(BILLING, {"action": "usage-cap", "amount": "12.50"}, follow=True)
    assert resp.status_code == 200 and "of 12.50 USD spent this period" in resp.content.decode()
    assert BillingAccount.objects.get().usage_cap == 1250
    bad = client.post(BILLING, {"action": "usage-cap", "amount": "-3"})
    assert bad.status_code == 400 and BillingAccount.objects.get().usage_cap == 1250
    client.post(BILLING, {"action": "usage-cap", "amount": ""})
    assert BillingAccount.objects.get().usage_cap is None


def test_add_a_card_shows_where_the_card_element_mounts(owner, stripe_server, settings):
    settings.PAYMENTS_PUBLISHABLE_KEY = "pk_test_fake"
    resp = owner.post(BILLING, {"action": "add-card"})
    assert resp.status_code == 201
    html = resp.content.decode()
    intent = next(iter(stripe_server.setup_intents.values()))
    assert 'id="card-element"' in html and f'data-client-secret="{intent["client_secret"]}"' in html
    assert 'data-publishable-key="pk_test_fake"' in html
    assert "CONTENT_SECURITY_POLICY" in html and "https://js.stripe.com" in html and no_inline_script(html)
    assert "script-src 'self'" in resp["Content-Security-Policy"]


def test_cards_plan_and_tax_ids_from_the_page(owner, stripe_server, workspace):
    owner.post(BILLING, {"action": "add-card"})
    pm = stripe_server.attach_card(next(iter(stripe_server.customers)), last4="4444")
    html = owner.get(BILLING).content.decode()
    assert "visa •••• 4444" in html and "Make default" in html
    owner.post(BILLING, {"action": "default", "item": pm})
    assert BillingAccount.objects.get().default_payment_method_id == pm
    resp = owner.post(BILLING, {"action": "subscribe", "plan": "pro"}, follow=True)
    assert "Subscribed to pro." in resp.content.decode()
    workspace.refresh_from_db()
    assert workspace.plan == "pro"
    bad = owner.post(BILLING, {"action": "tax-id", "type": "eu_vat", "value": "DE136695977"})
    assert bad.status_code == 400 and "rule: checksum" in bad.content.decode() and not TaxId.objects.exists()
    owner.post(BILLING, {"action": "tax-id", "type": "eu_vat", "value": "DE136695976"})
    assert TaxId.objects.get().value == "DE136695976"
    wrong = owner.post(BILLING, {"action": "default", "item": "pm_someone_else"}, follow=True)
    assert "No such payment method." in wrong.content.decode()
    resp = owner.post(BILLING, {"action": "address", "line1": "1 Main St", "country": "US", "city": "Austin"},
                      follow=True)
    assert "Billing address saved." in resp.content.decode()
    resp = owner.post(BILLING, {"action": "cancel"}, follow=True)
    assert "ends with the paid period" in resp.content.decode()
