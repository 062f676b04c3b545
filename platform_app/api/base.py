"""What every platform endpoint shares: authentication, scope and role checks,
workspace lookup, camelCase JSON, strict input, cursor lists, schema metadata.

A view declares its scope per method with `@endpoint(scope=...)`; the checks run
once, here, before the handler:

1. authenticate (401);
2. for `/v1/orgs/{orgId}/...`: the caller must be a member and a bound token must
   be bound to that workspace (404 otherwise, so ids cannot be probed); then the workspace's
   IP allowlist and "require SSO" rule (403 `ip_not_allowed` / `sso_required`, services/org/access.py);
3. the token's scopes must allow the route's scope (403 `insufficient_scope`);
4. the member's role must allow it too (403 `forbidden`): a token never exceeds its owner's role.
"""
import base64
import binascii
from datetime import UTC, datetime

from drf_spectacular.utils import (OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_field,
                                   inline_serializer)
from rest_framework import serializers
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from config import ratelimit
from config.errors import ValidationFailed
from config.inputs import query_int
from config.openapi import PlatformErrorSerializer
from config.parsers import CamelCaseJSONParser  # bounded size and depth, storable text
from config.renderers import CamelCaseJSONRenderer
from platform_app.api.kept import kept as kept_answers
from platform_app.authentication import Actor, BearerAuthentication, CookieSessionAuthentication
from platform_app.services.identity.scopes import ROLE_SCOPES, scope_allows
from platform_app.services.org.access import Credential, InsufficientScope, workspace_enter  # noqa: F401 (re-export)




def field_with_schema(schema: dict, base=serializers.CharField):
    """A field class that validates as `base` and publishes `schema`: what a service checks itself
    (an enum, a pattern), documented, while the service keeps its own error codes."""
    return extend_schema_field(schema)(type(f"Documented{base.__name__}", (base,), {}))


ErrorSerializer = PlatformErrorSerializer  # the body of every platform error (contract.md)
_PAGES: dict = {}


def page_of(item_class):
    """The schema of a list answer, `{"items": [...], "nextCursor"}`: one component per item type."""
    if item_class not in _PAGES:
        name = item_class.__name__.removesuffix("Serializer")
        _PAGES[item_class] = inline_serializer(f"Paginated{name}List", {
            "items": item_class(many=True),
            "next_cursor": serializers.CharField(allow_null=True, help_text="Pass as `cursor` for the next page; "
                                                                            "null on the last page."),
        })
        _PAGES[item_class].is_page = True  # config.openapi keeps the `_list` operation id
    return _PAGES[item_class]


PAGE_PARAMETERS = [OpenApiParameter("limit", {"type": "integer", "minimum": 1},
                                   description="1-100, default 20 (larger values are clamped)"),
                   OpenApiParameter("cursor", str, description="`nextCursor` of the previous page")]


def endpoint(*, scope: str | None = None, status: int = 200, request=None, response=None, public: bool = False,
             summary: str | None = None, errors=(), also: dict | None = None, also_auth=(), kept=False,
             **schema_kwargs):
    """Declare a handler's required scope and its documented success response.

    A list response (`Serializer(many=True)`) is published as the list envelope, with `limit` and
    `cursor` when the handler pages with `cursor_page`. The usual errors (401, 403, 404...) are
    derived by config.openapi; `errors` names the others this handler can answer (e.g. 429), and `also`
    further successes (`{200: Serializer}` for an idempotent replay), `also_auth` security schemes beside the
    bearer and cookie ones (`{"streamToken": []}`). `kept`: a GET in a workspace whose answers are kept whole until
    the workspace's rows change (api/kept.py); True, or `keep(data)` saying which answers may be.
    """

    def wrap(handler):
        handler.required_scope = scope
        handler.public = public
        body = response
        parameters = list(schema_kwargs.pop("parameters", []))
        if isinstance(body, serializers.ListSerializer):
            body = page_of(type(body.child))
            if "cursor_page" in handler.__code__.co_names:
                paging = {p.name for p in PAGE_PARAMETERS}
                parameters = [p for p in parameters if getattr(p, "name", None) not in paging] + PAGE_PARAMETERS
        responses = {status: body if body is not None else OpenApiResponse(description="OK"), **(also or {})}
        responses.update({code: ErrorSerializer for code in errors})
        desc = schema_kwargs.pop("description", "") or ""
        if scope:
            desc = (f"Required scope: `{scope}`.\n\n" + desc).strip()
        auth = [] if public else [{"bearerAuth": [scope] if scope else []}, {"cookieAuth": []}, *also_auth]
        extensions = {"x-required-scope": scope} if scope else None
        handler = extend_schema(request=request, responses=responses, summary=summary, description=desc, auth=auth,
                                extensions=extensions, parameters=parameters or None, **schema_kwargs)(handler)
        return kept_answers(handler, None if kept is True else kept) if kept else handler

    return wrap


# Queries ---------------------------------------------------------------------------

def idempotency_key(request) -> str | None:
    """The `Idempotency-Key` header (its length rule is the trigger service's)."""
    return request.headers.get("Idempotency-Key") or None


def _encode_cursor(created_at: datetime, pk) -> str:
    return base64.urlsafe_b64encode(f"{created_at.isoformat()}|{pk}".encode()).decode()


def _decode_cursor(cursor: str):
    try:
        created, pk = base64.urlsafe_b64decode(cursor.encode()).decode().split("|", 1)
        moment = datetime.fromisoformat(created)
        # only cursors this API wrote pass: an aware time the database can hold, an id without NUL
        moment = moment.replace(tzinfo=moment.tzinfo or UTC).astimezone(UTC)
        if "\x00" in pk:
            raise ValueError(pk)
        return moment, pk
    except (ValueError, OverflowError, binascii.Error, UnicodeDecodeError):
        raise ValidationFailed("`cursor` is not valid.", details={"cursor": ["Invalid cursor."]})


def cursor_page(request, queryset, serializer_class, *, context=None, order_field: str = "created_at") -> Response:
    """`{"items": [...], "nextCursor"}`, newest first, keyset-paginated on (created_at, id)."""
    from django.db.models import Q

    limit = query_int(request, "limit", default=20, maximum=100)
    cursor = request.query_params.get("cursor")
    qs = queryset.order_by(f"-{order_field}", "-pk")
    if cursor:
        created, pk = _decode_cursor(cursor)
        # the `<=` bound lets the database start its index scan at the cursor; the OR alone reads from the top
        qs = qs.filter(**{f"{order_field}__lte": created}).filter(
            Q(**{f"{order_field}__lt": created}) | Q(**{order_field: created, "pk__lt": pk}))
    rows = list(qs[: limit + 1])
    next_cursor = _encode_cursor(getattr(rows[limit - 1], order_field), rows[limit - 1].pk) if len(rows) > limit else None
    items = serializer_class(rows[:limit], many=True, context=context or {"request": request}).data
    return Response({"items": items, "next_cursor": next_cursor})


# Views ---------------------------------------------------------------------------

class PlatformView(APIView):
    """Base of every `/v1` view."""

    authentication_classes = [BearerAuthentication, CookieSessionAuthentication]
    permission_classes = [IsAuthenticated]
    renderer_classes = [CamelCaseJSONRenderer]
    parser_classes = [CamelCaseJSONParser]
    workspace = None
    membership = None

    def get_permissions(self):
        handler = getattr(self, (self.request.method or "get").lower(), None)
        if handler is None or getattr(handler, "public", False):
            return []  # public, or a method this view lacks: let DRF answer 405
        return super().get_permissions()

    @property
    def actor(self) -> Actor | None:
        return self.request.auth if isinstance(self.request.auth, Actor) else None

    @property
    def ip(self) -> str:
        return ratelimit.client_ip(self.request)

    @property
    def credential(self) -> Credential:
        """This request's credential, as the access service sees it (services/org/access.py)."""
        actor = self.actor
        if actor is None:
            return Credential(ip=self.ip)
        cookie = actor.type == "session" and actor.session is None
        return Credential(ip=self.ip, scopes=frozenset(actor.scopes), bound_workspace_id=actor.workspace_id,
                          token=actor.token, auth_session=actor.session,
                          cookie_session=self.request.session if cookie else None)

    def enter(self, ref: str, scope: str | None):
        """The one access check for the workspace `ref` names (an `orgId` in the path, the query or the body)."""
        return workspace_enter(user=self.request.user, ref=ref, credential=self.credential, scope=scope)

    def holds(self, scope: str) -> bool:
        """Whether the caller holds `scope` in the URL's workspace: its token's scopes and its role both allow it.
        For what a route shows more or less of (secrets in URLs), not for refusing it (`@endpoint` does that)."""
        actor = self.actor
        if actor is not None and not scope_allows(actor.scopes, scope):
            return False
        return self.membership is not None and scope_allows(ROLE_SCOPES[self.membership.role], scope)

    def project(self, project_id: str):
        """A project of the URL's workspace (by id or slug); 404 otherwise."""
        from platform_app.services.projects.projects import project_get

        return project_get(workspace=self.workspace, project_id=project_id)

    def required_scope(self, request) -> str | None:
        handler = getattr(self, request.method.lower(), None)
        return getattr(handler, "required_scope", None)

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        if not request.user.is_authenticated or getattr(self, request.method.lower(), None) is None:
            return  # anonymous, or a method this view lacks: DRF answers 405 before any workspace lookup
        scope = self.required_scope(request)
        actor = self.actor
        if "org_id" in kwargs:
            access = self.enter(kwargs["org_id"], scope)
            self.workspace, self.membership = access.workspace, access.membership
        elif actor and not scope_allows(actor.scopes, scope):
            raise InsufficientScope(scope, actor.scopes)
