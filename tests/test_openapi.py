"""Each service publishes its own OpenAPI document; the platform's states every route's scope."""
import json

import pytest

pytestmark = pytest.mark.django_db


def schema(api, url):
    resp = api.get(url, HTTP_ACCEPT="application/json")
    assert resp.status_code == 200
    return json.loads(resp.content)


@pytest.mark.parametrize("url, prefix", [("/v1/openapi.json", "/v1/"), ("/api/v1/openapi.json", "/api/v1/"),
                                         ("/api/openapi.json", "/api/")])
def test_each_schema_lists_only_its_service(api, url, prefix):
    paths = schema(api, url)["paths"]
    for path in paths:
        assert path.startswith(prefix) or path == "/health"
        if prefix == "/api/":
            assert not path.startswith("/api/v1/")


def test_platform_schema_declares_security_and_scopes(api):
    doc = schema(api, "/v1/openapi.json")
    assert doc["info"]["version"] == "0.1.0"
    assert doc["components"]["securitySchemes"]["bearerAuth"]["scheme"] == "bearer"
    op = doc["paths"]["/v1/orgs/{org_id}/api-tokens"]["post"]
    assert op["x-required-scope"] == "admin"
    assert {"bearerAuth": ["admin"]} in op["security"]
    assert "201" in op["responses"]


def test_swagger_ui_is_served(api):
    assert api.get("/v1/docs").status_code == 200
