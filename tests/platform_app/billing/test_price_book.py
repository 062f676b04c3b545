"""The price book in the Django admin: a new price is a new row, and two rows of a meter may not be valid at the
same time."""
import pytest
from django.urls import reverse

from platform_app.models import Price
from tests.factories import SuperuserFactory
from tests.platform_app.billing.factories import PriceFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff(client):
    client.force_login(SuperuserFactory(email="staff@example.com"))
    return client


def add(staff, **fields):
    data = {"meter": "build_seconds", "unit_amount": 2, "unit_size": 60, "unit_label": "build minute",
            "currency": "usd", "valid_from_0": "2027-01-01", "valid_from_1": "00:00:00", "valid_until_0": "",
            "valid_until_1": "", **fields}
    return staff.post(reverse("admin:platform_app_price_add"), data)


def test_overlapping_prices_are_refused_and_a_following_one_is_taken(staff):
    old = PriceFactory(meter="build_seconds", unit_amount=1)  # valid from 2000, open-ended
    resp = add(staff)
    assert resp.status_code == 200 and "in the same span" in resp.content.decode()
    assert Price.objects.count() == 1
    old.valid_until = old.valid_from.replace(year=2027)
    old.save()
    assert add(staff).status_code == 302
    assert list(Price.objects.order_by("valid_from").values_list("unit_amount", flat=True)) == [1, 2]


def test_a_span_that_ends_before_it_starts_is_refused(staff):
    resp = add(staff, valid_until_0="2026-01-01", valid_until_1="00:00:00")
    assert resp.status_code == 200 and not Price.objects.exists()
