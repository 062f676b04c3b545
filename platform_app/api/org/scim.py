"""SCIM 2.0 at /scim/v2/ (RFC 7644): Users, Groups, ServiceProviderConfig, Schemas, ResourceTypes.

Authenticated by the workspace's SCIM token (`Authorization: Bearer scim_...`, `POST O/sso/scim-token`); every
error, a wrong token included, answers in SCIM's error schema
`{"schemas": ["urn:ietf:params:scim:api:messages:2.0:Error"], "status", "detail", "scimType"?}`. JSON keys are
SCIM's own (no camelCase conversion); answers are `application/scim+json` (or `application/json` when asked).
Not part of the platform's OpenAPI document. The rules are platform_app/services/org/scim/."""
from django.contrib.auth.models import AnonymousUser
from django.http import Http404
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.exceptions import AuthenticationFailed, NotAuthenticated
from rest_framework.permissions import BasePermission
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from config.errors import classify
from config.parsers import JSONParser
from platform_app.models import WorkspaceSso
from platform_app.services.org import scim as services
from platform_app.services.org.scim import SCHEMA_GROUP, SCHEMA_USER, ScimError
from platform_app.services.org.sso import scim_authenticate, scim_base_url

SCHEMA_ERROR = "urn:ietf:params:scim:api:messages:2.0:Error"
SCHEMA_LIST = "urn:ietf:params:scim:api:messages:2.0:ListResponse"
SCHEMA_SPC = "urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig"
SCHEMA_RESOURCE_TYPE = "urn:ietf:params:scim:schemas:core:2.0:ResourceType"
SCHEMA_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:Schema"
REALM = 'Bearer realm="scim"'


class ScimJSONRenderer(JSONRenderer):
    media_type = "application/scim+json"
    format = "scim"


class ScimJSONParser(JSONParser):
    media_type = "application/scim+json"


class ScimTokenAuthentication(BaseAuthentication):
    """`Bearer scim_...`: the workspace whose live SCIM token it is becomes `request.auth` (a WorkspaceSso)."""

    def authenticate(self, request):
        header = get_authorization_header(request).split()
        if not header or header[0].lower() != b"bearer":
            return None
        row = scim_authenticate(header[1].decode(errors="replace")) if len(header) == 2 else None
        if row is None:
            raise AuthenticationFailed("The SCIM token is not valid.")
        return AnonymousUser(), row

    def authenticate_header(self, request):
        return REALM


class HasScimToken(BasePermission):
    def has_permission(self, request, view):
        if not isinstance(request.auth, WorkspaceSso):
            raise NotAuthenticated("A SCIM token is required (Authorization: Bearer scim_...).")
        return True


class ScimView(APIView):
    authentication_classes = [ScimTokenAuthentication]
    permission_classes = [HasScimToken]
    renderer_classes = [ScimJSONRenderer, JSONRenderer]
    parser_classes = [ScimJSONParser, JSONParser]
    schema = None  # outside /v1: in no OpenAPI document

    @property
    def workspace(self):
        return self.request.auth.workspace

    def handle_exception(self, exc):
        if isinstance(exc, ScimError):
            status, detail, scim_type = exc.status, exc.message, exc.scim_type
        else:
            error = classify(exc)
            if error is None:
                return super().handle_exception(exc)  # a bug: Django's 500
            status, detail = error.status, error.message
            scim_type = {"malformed_json": "invalidSyntax", "validation_error": "invalidValue"}.get(error.code)
        body = {"schemas": [SCHEMA_ERROR], "status": str(status), "detail": detail}
        if scim_type:
            body["scimType"] = scim_type
        response = Response(body, status=status)
        if status == 401:
            response["WWW-Authenticate"] = REALM
        return response


SCHEMA_SEARCH = "urn:ietf:params:scim:api:messages:2.0:SearchRequest"


def _search_params(data) -> dict:
    """A SearchRequest body (RFC 7644 3.4.3) as the query parameters a GET would carry."""
    if not isinstance(data, dict):
        raise ScimError(400, "The body must be a JSON object.", "invalidSyntax")
    schemas = data.get("schemas")
    if schemas is not None and (not isinstance(schemas, list) or SCHEMA_SEARCH not in schemas):
        raise ScimError(400, f"`schemas` must include {SCHEMA_SEARCH}.", "invalidSyntax")
    params = {}
    for key in ("attributes", "excludedAttributes"):
        value = data.get(key)
        if value is not None:
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ScimError(400, f"`{key}` must be a list of attribute names.", "invalidValue")
            params[key] = ",".join(value)
    if data.get("filter") is not None:
        if not isinstance(data["filter"], str):
            raise ScimError(400, "`filter` must be a string.", "invalidFilter")
        params["filter"] = data["filter"]
    for key in ("startIndex", "count"):
        if data.get(key) is not None:
            if isinstance(data[key], bool) or not isinstance(data[key], int):
                raise ScimError(400, f"`{key}` must be an integer.", "invalidValue")
            params[key] = str(data[key])
    return params


def _page_params(params) -> tuple[int, int | None]:
    values = []
    for name, default in (("startIndex", 1), ("count", None)):
        raw = params.get(name)
        if raw is None:
            values.append(default)
            continue
        try:
            values.append(int(raw))
        except ValueError:
            raise ScimError(400, f"`{name}` must be an integer.", "invalidValue")
        if abs(values[-1]) > 2**31:
            raise ScimError(400, f"`{name}` is out of range.", "invalidValue")
    return values[0], values[1]


def list_response(params, queryset, answer) -> Response:
    start, count = _page_params(params)
    total, rows = services.scim_page(queryset, start_index=start, count=count)
    return Response({"schemas": [SCHEMA_LIST], "totalResults": total, "startIndex": max(start, 1),
                     "itemsPerPage": len(rows), "Resources": [answer(params, r) for r in rows]})


def _meta(kind: str, obj, path: str) -> dict:
    return {"resourceType": kind, "created": obj.created_at.isoformat(), "lastModified": obj.updated_at.isoformat(),
            "location": f"{scim_base_url()}/{path}/{obj.pk}"}


def user_resource(u) -> dict:
    """The User as RFC 7643 4.1 has it; attributes with no value are left out (a removed `name` is gone)."""
    name = {key: value for key, value in (("givenName", u.given_name), ("familyName", u.family_name)) if value}
    body = {"schemas": [SCHEMA_USER], "id": u.pk, "userName": u.user_name}
    if name:
        body["name"] = name
    if u.display_name:
        body["displayName"] = u.display_name
    body.update({"emails": list(u.emails), "active": u.active,
                 "groups": [{"value": g.pk, "display": g.display_name, "$ref": f"{scim_base_url()}/Groups/{g.pk}",
                             "type": "direct"} for g in u.groups.all()],
                 "meta": _meta("User", u, "Users")})
    if u.external_id:
        body["externalId"] = u.external_id
    return body


def group_resource(g) -> dict:
    body = {"schemas": [SCHEMA_GROUP], "id": g.pk, "displayName": g.display_name,
            "members": [{"value": m.pk, "$ref": f"{scim_base_url()}/Users/{m.pk}", "type": "User"}
                        for m in g.members.all()],
            "meta": _meta("Group", g, "Groups")}
    if g.external_id:
        body["externalId"] = g.external_id
    return body


ALWAYS_RETURNED = {"schemas", "id"}  # RFC 7643 3.1 / 7.: "returned": "always"


def _attribute_paths(raw: str | None, schema: str) -> list[tuple[str, ...]] | None:
    """`attributes` / `excludedAttributes` (RFC 7644 3.9): comma-separated names, optionally with the schema's URN
    and one `.sub` level, compared case-insensitively; None when absent."""
    if raw is None:
        return None
    paths = []
    for name in raw.split(","):
        name = name.strip()
        if name.lower().startswith(schema.lower() + ":"):
            name = name[len(schema) + 1:]
        if not name or len(name) > 200:
            continue
        paths.append(tuple(part.lower() for part in name.split(".", 1)))
    return paths


def _shaped(resource: dict, params, schema: str) -> dict:
    """The resource with only `attributes`, or without `excludedAttributes`; `id` and `schemas` always stay."""
    wanted = _attribute_paths(params.get("attributes"), schema)
    excluded = _attribute_paths(params.get("excludedAttributes"), schema)
    if wanted is None and not excluded:
        return resource
    shaped = {}
    for key, value in resource.items():
        top = key.lower()
        if top in ALWAYS_RETURNED:
            shaped[key] = value
            continue
        if wanted is not None:
            subs = [p[1] for p in wanted if p[0] == top and len(p) == 2]
            if (top,) in wanted:
                shaped[key] = value
            elif subs and isinstance(value, dict):
                shaped[key] = {k: v for k, v in value.items() if k.lower() in subs}
            elif subs and isinstance(value, list):
                shaped[key] = [{k: v for k, v in item.items() if k.lower() in subs} for item in value]
            continue
        if (top,) in excluded:
            continue
        subs = [p[1] for p in excluded if p[0] == top and len(p) == 2]
        if subs and isinstance(value, dict):
            value = {k: v for k, v in value.items() if k.lower() not in subs}
        elif subs and isinstance(value, list):
            value = [{k: v for k, v in item.items() if k.lower() not in subs} for item in value]
        shaped[key] = value
    return shaped


def user_answer(params, scim_user) -> dict:
    return _shaped(user_resource(scim_user), params, SCHEMA_USER)


def group_answer(params, group) -> dict:
    return _shaped(group_resource(group), params, SCHEMA_GROUP)


def created(request, obj, answer, endpoint: str) -> Response:
    return Response(answer(request.query_params, obj), status=201,
                    headers={"Location": f"{scim_base_url()}/{endpoint}/{obj.pk}"})


# Users and Groups ----------------------------------------------------------------------------------

class UsersView(ScimView):
    def get(self, request):
        return self.listed(request.query_params)

    def listed(self, params):
        return list_response(params, services.scim_users(workspace=self.workspace, filter=params.get("filter")),
                             user_answer)

    def post(self, request):
        return created(request, services.scim_user_create(workspace=self.workspace, data=request.data), user_answer,
                       "Users")


class UsersSearchView(UsersView):
    """POST /Users/.search: the list, its parameters in a SearchRequest body (RFC 7644 3.4.3)."""

    def post(self, request):
        return self.listed(_search_params(request.data))


class UserView(ScimView):
    def get(self, request, scim_id):
        user = services.scim_user_get(workspace=self.workspace, user_id=scim_id)
        return Response(user_answer(request.query_params, user))

    def put(self, request, scim_id):
        user = services.scim_user_replace(workspace=self.workspace, user_id=scim_id, data=request.data)
        return Response(user_answer(request.query_params, user))

    def patch(self, request, scim_id):
        user = services.scim_user_patch(workspace=self.workspace, user_id=scim_id, data=request.data)
        return Response(user_answer(request.query_params, user))

    def delete(self, request, scim_id):
        services.scim_user_delete(workspace=self.workspace, user_id=scim_id)
        return Response(status=204)


class GroupsView(ScimView):
    def get(self, request):
        return self.listed(request.query_params)

    def listed(self, params):
        return list_response(params, services.scim_groups(workspace=self.workspace, filter=params.get("filter")),
                             group_answer)

    def post(self, request):
        return created(request, services.scim_group_create(workspace=self.workspace, data=request.data),
                       group_answer, "Groups")


class GroupsSearchView(GroupsView):
    """POST /Groups/.search (RFC 7644 3.4.3)."""

    def post(self, request):
        return self.listed(_search_params(request.data))


class GroupView(ScimView):
    def get(self, request, scim_id):
        group = services.scim_group_get(workspace=self.workspace, group_id=scim_id)
        return Response(group_answer(request.query_params, group))

    def put(self, request, scim_id):
        group = services.scim_group_replace(workspace=self.workspace, group_id=scim_id, data=request.data)
        return Response(group_answer(request.query_params, group))

    def patch(self, request, scim_id):
        group = services.scim_group_patch(workspace=self.workspace, group_id=scim_id, data=request.data)
        return Response(group_answer(request.query_params, group))

    def delete(self, request, scim_id):
        services.scim_group_delete(workspace=self.workspace, group_id=scim_id)
        return Response(status=204)


# Discovery (RFC 7644 section 4) ------------------------------------------------------------------------

def _attribute(name, type_="string", *, required=False, multi=False, mutability="readWrite", unique="none",
               case_exact=False, sub=None, returned="default", description="", reference_types=None,
               canonical=None):
    attribute = {"name": name, "type": type_, "multiValued": multi, "description": description,
                 "required": required, "caseExact": case_exact, "mutability": mutability, "returned": returned,
                 "uniqueness": unique}
    if sub:
        attribute["subAttributes"] = sub
    if reference_types:
        attribute["referenceTypes"] = reference_types
    if canonical:
        attribute["canonicalValues"] = canonical
    return attribute


SCHEMAS = {
    SCHEMA_USER: {"id": SCHEMA_USER, "name": "User", "description": "A member of the workspace", "attributes": [
        _attribute("userName", required=True, unique="server", description="Unique in the workspace, "
                                                                           "case-insensitively"),
        _attribute("name", "complex", sub=[_attribute("givenName"), _attribute("familyName")]),
        _attribute("displayName"),
        _attribute("emails", "complex", multi=True, sub=[_attribute("value"),
                                                         _attribute("type", canonical=["work", "home", "other"]),
                                                         _attribute("primary", "boolean")],
                   description="The primary (else the first) is the platform account's email"),
        _attribute("active", "boolean", description="false removes the membership and revokes its access"),
        _attribute("groups", "complex", multi=True, mutability="readOnly", sub=[
            _attribute("value", mutability="readOnly"),
            _attribute("$ref", "reference", mutability="readOnly", reference_types=["Group"]),
            _attribute("display", mutability="readOnly"),
            _attribute("type", mutability="readOnly", canonical=["direct"])]),
        _attribute("externalId", case_exact=True),
    ]},
    SCHEMA_GROUP: {"id": SCHEMA_GROUP, "name": "Group",
                   "description": "A group named like a role (admin, developer, billing, viewer) gives it",
                   "attributes": [
                       _attribute("displayName", required=True, unique="server"),
                       _attribute("members", "complex", multi=True, sub=[
                           _attribute("value", mutability="immutable"),
                           _attribute("$ref", "reference", mutability="immutable", reference_types=["User"]),
                           _attribute("type", mutability="immutable", canonical=["User"])]),
                       _attribute("externalId", case_exact=True)]},
}
RESOURCE_TYPES = {
    "User": {"id": "User", "name": "User", "endpoint": "/Users", "schema": SCHEMA_USER, "description": "Members"},
    "Group": {"id": "Group", "name": "Group", "endpoint": "/Groups", "schema": SCHEMA_GROUP,
              "description": "Groups; role groups give roles"},
}


def _schema(key: str) -> dict:
    return {**SCHEMAS[key], "schemas": [SCHEMA_SCHEMA],
            "meta": {"resourceType": "Schema", "location": f"{scim_base_url()}/Schemas/{key}"}}


def _resource_type(key: str) -> dict:
    return {**RESOURCE_TYPES[key], "schemas": [SCHEMA_RESOURCE_TYPE],
            "meta": {"resourceType": "ResourceType", "location": f"{scim_base_url()}/ResourceTypes/{key}"}}


def _listed(items: list) -> Response:
    return Response({"schemas": [SCHEMA_LIST], "totalResults": len(items), "startIndex": 1,
                     "itemsPerPage": len(items), "Resources": items})


class ServiceProviderConfigView(ScimView):
    def get(self, request):
        from django.conf import settings

        return Response({
            "schemas": [SCHEMA_SPC], "documentationUri": f"{settings.SITE_URL.rstrip('/')}/v1/docs",
            "patch": {"supported": True}, "bulk": {"supported": False, "maxOperations": 0, "maxPayloadSize": 0},
            "filter": {"supported": True, "maxResults": settings.SCIM_MAX_RESULTS},
            "changePassword": {"supported": False}, "sort": {"supported": False}, "etag": {"supported": False},
            "authenticationSchemes": [{"type": "oauthbearertoken", "name": "SCIM token", "primary": True,
                                       "description": "The workspace's SCIM token: Authorization: Bearer scim_..."}],
            "meta": {"resourceType": "ServiceProviderConfig",
                     "location": f"{scim_base_url()}/ServiceProviderConfig"}})


class SchemasView(ScimView):
    def get(self, request, key=None):
        if key is None:
            return _listed([_schema(k) for k in SCHEMAS])
        if key not in SCHEMAS:
            raise ScimError(404, "No such schema.")
        return Response(_schema(key))


class ResourceTypesView(ScimView):
    def get(self, request, key=None):
        if key is None:
            return _listed([_resource_type(k) for k in RESOURCE_TYPES])
        if key not in RESOURCE_TYPES:
            raise ScimError(404, "No such resource type.")
        return Response(_resource_type(key))


class RootSearchView(ScimView):
    """POST /.search over every resource type at once: not offered (RFC 7644 3.4.3 lets a server answer 501);
    /Users/.search and /Groups/.search are."""

    def post(self, request):
        raise ScimError(501, "Search across resource types is not offered; use /Users/.search or /Groups/.search.")


class NotFoundView(ScimView):
    """Any other path under /scim/v2/: SCIM's 404 (after the token check)."""

    def _missing(self, request, *args, **kwargs):
        raise Http404

    get = post = put = patch = delete = _missing
