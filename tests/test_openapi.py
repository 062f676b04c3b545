"""Each service publishes its own OpenAPI document, and it says what the API does: list envelopes, the
errors of every operation in the service's error body, strict request bodies; docs pages use no CDN."""
import json
import re

import pytest
import yaml

pytestmark = pytest.mark.django_db

SCHEMAS = {"platform": "/v1/openapi.json", "otp": "/api/v1/openapi.json", "warehouse": "/api/openapi.json"}
ERROR_COMPONENT = {"platform": "Error", "otp": "OtpError", "warehouse": "WarehouseError"}
METHODS = ("get", "post", "put", "patch", "delete")


def schema(api, url):
    resp = api.get(url)
    assert resp.status_code == 200
    return json.loads(resp.content)


def operations(doc):
    for path, item in doc["paths"].items():
        for method, op in item.items():
            if method in METHODS:
                yield path, method, op


def resolve(doc, node):
    while "$ref" in node:
        node = doc["components"]["schemas"][node["$ref"].rsplit("/", 1)[1]]
    return node


def ok_schema(doc, op):
    ok = next((code for code in op["responses"] if code.startswith("2")), None)
    if ok is None:
        return None  # a redirect
    content = op["responses"][ok].get("content", {}).get("application/json")
    return resolve(doc, content["schema"]) if content else None


@pytest.mark.parametrize("url, prefix", [("/v1/openapi.json", "/v1/"), ("/api/v1/openapi.json", "/api/v1/"),
                                         ("/api/openapi.json", "/api/")])
def test_each_schema_lists_only_its_service(api, url, prefix):
    paths = schema(api, url)["paths"]
    for path in paths:
        assert path.startswith(prefix) or path == "/health"
        if prefix == "/api/":
            assert not path.startswith("/api/v1/")


@pytest.mark.parametrize("url", SCHEMAS.values())
def test_json_url_answers_json_and_yaml_beside_it(api, url):
    for accept in ("", "application/yaml", "application/vnd.oai.openapi", "text/html"):
        resp = api.get(url, HTTP_ACCEPT=accept) if accept else api.get(url)
        assert resp.status_code == 200 and resp["Content-Type"].startswith("application/json")
        doc = json.loads(resp.content)
    yaml_resp = api.get(url.replace(".json", ".yaml"), HTTP_ACCEPT="application/json")
    assert yaml_resp.status_code == 200 and yaml_resp["Content-Type"].startswith("application/yaml")
    assert yaml.safe_load(yaml_resp.content)["paths"].keys() == doc["paths"].keys()


def test_platform_schema_declares_security_and_scopes(api):
    doc = schema(api, "/v1/openapi.json")
    assert doc["info"]["version"] == "0.1.0"
    assert doc["components"]["securitySchemes"]["bearerAuth"]["scheme"] == "bearer"
    op = doc["paths"]["/v1/orgs/{org_id}/api-tokens"]["post"]
    assert op["x-required-scope"] == "admin"
    assert {"bearerAuth": ["admin"]} in op["security"]
    assert "201" in op["responses"]


# Lists ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("service", SCHEMAS)
def test_no_answer_is_documented_as_a_bare_array(api, service):
    doc = schema(api, SCHEMAS[service])
    for path, method, op in operations(doc):
        body = ok_schema(doc, op)
        assert body is None or body.get("type") != "array", f"{method} {path}"


def test_cursor_lists_document_their_envelope_and_paging(api, alice, as_user):
    doc = schema(api, "/v1/openapi.json")
    assert doc["paths"]["/v1/orgs/{org_id}/projects"]["get"]["operationId"].endswith("_list")
    op = doc["paths"]["/v1/orgs/{org_id}/project-groups"]["get"]
    envelope = ok_schema(doc, op)
    assert envelope["required"] == ["items", "nextCursor"] and envelope["properties"]["nextCursor"]["nullable"]
    assert envelope["properties"]["items"]["items"] == {"$ref": "#/components/schemas/ProjectGroup"}
    params = {p["name"]: p for p in op["parameters"] if p["in"] == "query"}
    assert params["limit"]["schema"] == {"type": "integer", "minimum": 1} and "cursor" in params

    client = as_user(alice)
    for name in ("Web", "Data"):
        assert client.post("/v1/orgs/acme/project-groups", {"name": name}, format="json").status_code == 201
    first = client.get("/v1/orgs/acme/project-groups?limit=1").json()
    assert first.keys() == envelope["properties"].keys() and len(first["items"]) == 1 and first["nextCursor"]
    second = client.get(f"/v1/orgs/acme/project-groups?limit=1&cursor={first['nextCursor']}").json()
    assert {first["items"][0]["name"], second["items"][0]["name"]} == {"Web", "Data"}
    assert second["nextCursor"] is None


def test_unpaged_platform_lists_share_the_envelope(api, alice, as_user):
    doc = schema(api, "/v1/openapi.json")
    op = doc["paths"]["/v1/orgs"]["get"]
    assert ok_schema(doc, op)["required"] == ["items", "nextCursor"]
    assert not any(p["name"] in ("limit", "cursor") for p in op.get("parameters", []))
    assert as_user(alice).get("/v1/orgs").json().keys() == {"items", "nextCursor"}


def test_warehouse_pages_document_their_envelope(api):
    doc = schema(api, "/api/openapi.json")
    op = doc["paths"]["/api/warehouses"]["get"]
    envelope = ok_schema(doc, op)
    assert {"results", "count", "page", "page_size", "attribution"} <= set(envelope["required"])
    assert {p["name"] for p in op["parameters"]} == {"page", "page_size"} and "404" in op["responses"]
    body = api.get("/api/warehouses").json()
    assert body.keys() == envelope["properties"].keys()
    search = ok_schema(doc, doc["paths"]["/api/warehouses/search"]["get"])
    assert api.get("/api/warehouses/search?q=x").json().keys() == search["properties"].keys()
    assert ok_schema(doc, doc["paths"]["/api/quotes"]["get"])["properties"]["results"]["items"] == {
        "$ref": "#/components/schemas/Quote"}


# Errors --------------------------------------------------------------------------------------

# The MCP authorization server speaks OAuth: its own error fields (contract.md), and pages for a browser
OAUTH_ERROR = {"application/json": {"$ref": "#/components/schemas/McpOAuthError"}}
REFUSED_PAGE = {"text/html": {"type": "string"}}
OWN_ERRORS = {("post", "/v1/mcp/token", "400"): OAUTH_ERROR, ("post", "/v1/mcp/token", "401"): OAUTH_ERROR,
              ("post", "/v1/mcp/register", "400"): OAUTH_ERROR,
              ("post", "/v1/auth/device/code", "400"): OAUTH_ERROR, ("post", "/v1/auth/device/token", "400"): OAUTH_ERROR,
              ("get", "/v1/mcp/authorize", "400"): REFUSED_PAGE, ("post", "/v1/mcp/authorize", "400"): REFUSED_PAGE}


@pytest.mark.parametrize("service", SCHEMAS)
def test_every_operation_declares_the_errors_it_can_answer(api, service):
    doc = schema(api, SCHEMAS[service])
    error_ref = {"$ref": f"#/components/schemas/{ERROR_COMPONENT[service]}"}
    for path, method, op in operations(doc):
        codes, where = set(op["responses"]), f"{method} {path}"
        params = {p["in"] for p in op.get("parameters", [])}
        if "requestBody" in op:
            assert {"400", "413"} <= codes, where
        if "path" in params:
            assert "404" in codes, where
        if op.get("x-required-scope"):
            assert "403" in codes, where
        if any(requirement for requirement in op.get("security", [])):
            assert "401" in codes, where
        if method != "get":
            assert "409" in codes, where
        for code, response in op["responses"].items():
            if code >= "400":
                expected = OWN_ERRORS.get((method, path, code), {"application/json": error_ref})
                assert {media: body["schema"] for media, body in response["content"].items()} == expected, \
                    f"{where} {code}"
                assert response["description"], f"{where} {code}"


def test_rate_limited_routes_declare_429_with_retry_after(api):
    for url, path in (("/v1/openapi.json", "/v1/auth/sign-in"), ("/api/v1/openapi.json", "/api/v1/otp/send"),
                      ("/api/openapi.json", "/api/auth/login")):
        response = schema(api, url)["paths"][path]["post"]["responses"]["429"]
        assert response["headers"]["Retry-After"]["required"] is True


def test_error_components_match_the_bodies_served(api):
    cases = {"/v1/openapi.json": "/v1/auth/me", "/api/v1/openapi.json": "/api/v1/balance",
             "/api/openapi.json": "/api/auth/me"}
    for url, probe in cases.items():
        doc = schema(api, url)
        service = next(s for s, u in SCHEMAS.items() if u == url)
        component = doc["components"]["schemas"][ERROR_COMPONENT[service]]
        resp = api.get(probe)
        assert resp.status_code == 401
        body = resp.json()
        assert set(component["required"]) <= body.keys() <= component["properties"].keys()
    otp = schema(api, "/api/v1/openapi.json")["components"]["schemas"]["OtpErrorBody"]
    assert set(otp["required"]) == api.get("/api/v1/balance").json()["error"].keys()


# Request bodies --------------------------------------------------------------------------------

@pytest.mark.parametrize("service", SCHEMAS)
def test_request_bodies_refuse_unknown_fields(api, service):
    doc = schema(api, SCHEMAS[service])
    bodies = [(path, c["schema"]) for path, _, op in operations(doc) if "requestBody" in op
              for c in op["requestBody"]["content"].values()]
    assert bodies
    for path, body in bodies:
        if body.get("format") == "binary":  # an archive, not an object (a builder's upload)
            continue
        if path.startswith(("/v1/mcp", "/v1/auth/device/")):  # JSON-RPC and OAuth bodies: their standards say unknown members are ignored
            assert resolve(doc, body).get("additionalProperties") is not False, path
            continue
        assert resolve(doc, body)["additionalProperties"] is False, path
    if service == "warehouse":  # nested input serializers too
        assert doc["components"]["schemas"]["RequirementInputRequest"]["additionalProperties"] is False


def test_documented_strictness_is_what_the_api_enforces(api, alice, as_user):
    doc = schema(api, "/v1/openapi.json")
    create = resolve(doc, doc["paths"]["/v1/orgs"]["post"]["requestBody"]["content"]["application/json"]["schema"])
    assert create["properties"]["name"]["type"] == "string" and create["additionalProperties"] is False
    client = as_user(alice)
    for body, field in (({"name": "Beta", "color": "red"}, "color"), ({"name": 5}, "name"),
                        ({"name": "Beta", "slug": 0}, "slug")):
        resp = client.post("/v1/orgs", body, format="json")
        assert resp.status_code == 400 and field in resp.json()["details"], body
    assert client.post("/v1/auth/mfa/totp", "null", content_type="application/json").status_code == 400
    from platform_app.models import Workspace

    assert not Workspace.objects.filter(name__in=["Beta", "5"]).exists()


def test_patch_bodies_are_published_as_validated(api):
    doc = schema(api, "/v1/openapi.json")
    body = doc["paths"]["/v1/orgs/{org_id}/members/{member_id}"]["patch"]["requestBody"]["content"]
    member = resolve(doc, body["application/json"]["schema"])
    assert member["required"] == ["role"]
    assert member["properties"]["role"]["allOf"] == [{"$ref": "#/components/schemas/WorkspaceRoleEnum"}]


def test_integer_query_parameters_are_integers(alice, as_user, api):
    client = as_user(alice)
    for query in ("limit=", "limit=+5", "limit=%205", "limit=5_0", "limit=0"):
        resp = client.get(f"/v1/orgs/acme/project-groups?{query}")
        assert resp.status_code == 400 and "limit" in resp.json()["details"], query
    assert client.get("/v1/orgs/acme/project-groups?limit=500").status_code == 200  # clamped
    for query in ("page=", "page_size=+5", "page=0"):
        assert api.get(f"/api/warehouses?{query}").status_code == 400, query


def test_an_undeclared_method_is_405_before_any_workspace_lookup(alice, as_user):
    resp = as_user(alice).generic("TRACE", "/v1/orgs/no-such-workspace/stats")
    assert resp.status_code == 405


# Docs pages ----------------------------------------------------------------------------------

@pytest.mark.parametrize("url", ["/v1/docs", "/v1/redoc", "/api/v1/docs", "/api/v1/redoc", "/api/docs", "/api/redoc"])
def test_docs_pages_load_everything_from_this_server(api, url):
    resp = api.get(url)
    assert resp.status_code == 200
    html = resp.content.decode()
    assets = [a for a in re.findall(r'(?:src|href)="([^"]+)"', html) if a != f"{url}?script="]
    assert assets and all(a.startswith("/static/drf_spectacular_sidecar/") for a in assets), assets
    script = api.get(f"{url}?script=").content.decode() if "?script=" in html else html
    for text in (html, script):
        assert not re.search(r"https?://", text)
    assert "openapi.json" in script


@pytest.mark.parametrize("url", SCHEMAS.values())
def test_each_schema_is_valid_openapi(api, url):
    """Checked by openapi-spec-validator, a validator the schema's generator does not share: what a client
    generator or gateway reading the document would refuse."""
    from openapi_spec_validator import validate
    from openapi_spec_validator.validation.exceptions import OpenAPIValidationError

    try:
        validate(schema(api, url))
    except OpenAPIValidationError as error:
        pytest.fail(f"{url}: {error.message} at {'/'.join(map(str, error.absolute_path))}")
