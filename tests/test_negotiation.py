"""Content negotiation (config/negotiation.py): the usual `Accept` is answered at once, and every other request
gets DRF's own answer, through each service's error shape."""
import pytest
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db

BROWSER = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"


@pytest.mark.parametrize("accept, status", [
    (None, 200), ("*/*", 200), ("application/json", 200), (BROWSER, 200),
    ("text/html", 406), ("application/xml", 406), ("", 406),
])
def test_accept_header_picks_json_or_is_refused_in_the_error_shape(accept, status):
    headers = {} if accept is None else {"HTTP_ACCEPT": accept}
    resp = APIClient().get("/api/regions", **headers)
    assert resp.status_code == status and resp["Content-Type"] == "application/json"
    body = resp.json()
    if status == 200:
        assert body["results"] == [] and "attribution" in body
    else:
        assert body == {"error": "Could not satisfy the request Accept header.", "code": "not_acceptable"}


def test_format_override_still_names_the_renderer():
    client = APIClient()
    assert client.get("/api/regions?format=json").status_code == 200
    refused = client.get("/api/regions?format=xml", HTTP_ACCEPT="*/*")
    assert refused.status_code == 404 and refused.json()["code"] == "not_found"


def test_otp_api_refuses_an_unacceptable_type_in_its_own_shape():
    resp = APIClient().get("/api/v1/balance", HTTP_ACCEPT="text/html")
    assert resp.status_code == 406
    assert resp.json()["error"]["code"] == "not_acceptable"
