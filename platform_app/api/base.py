"""What every platform endpoint shares: authentication, scope and role checks,
workspace lookup, camelCase JSON, strict input, cursor lists, schema metadata.

A view declares its scope per method with `@endpoint(scope=...)`; the checks run
once, here, before the handler:

1. authenticate (401);
2. for `/v1/orgs/{orgId}/...`: the caller must be a member and a bound token must
   be bound to that workspace (404 otherwise, so ids cannot be probed);
3. the token's scopes must allow the route's scope (403 `insufficient_scope`);
4. the member's role must allow it too (403 `forbidden`): a token never exceeds its owner's role.
"""
import base64
import binascii
from datetime import datetime

from djangorestframework_camel_case.parser import CamelCaseJSONParser
from djangorestframework_camel_case.render import CamelCaseJSONRenderer
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from config import ratelimit
from config.errors import ApplicationError, Forbidden, NotFound, ValidationFailed
from platform_app.authentication import Actor, BearerAuthentication, CookieSessionAuthentication
from platform_app.services.scopes import ROLE_SCOPES, scope_allows
from platform_app.services.workspaces import workspace_for_member


class InsufficientScope(ApplicationError):
    status, code = 403, "insufficient_scope"

    def __init__(self, required: str, held):
        super().__init__(f"This action requires the `{required}` scope.",
                         details={"requiredScope": required, "tokenScopes": sorted(held)})


# Input ---------------------------------------------------------------------------

class InputSerializer(serializers.Serializer):
    """Rejects unknown fields and non-object bodies (contract: no silent mass assignment)."""

    def to_internal_value(self, data):
        if not isinstance(data, dict):
            raise serializers.ValidationError({"non_field_errors": ["Expected a JSON object."]})
        unknown = sorted(set(data) - set(self.fields))
        if unknown:
            raise serializers.ValidationError({name: ["Unknown field."] for name in unknown})
        return super().to_internal_value(data)


class ErrorSerializer(serializers.Serializer):
    code = serializers.CharField()
    message = serializers.CharField()
    details = serializers.JSONField(allow_null=True)
    status = serializers.IntegerField()


def endpoint(*, scope: str | None = None, status: int = 200, request=None, response=None, public: bool = False,
             summary: str | None = None, **schema_kwargs):
    """Declare a handler's required scope and its documented success response."""

    def wrap(handler):
        handler.required_scope = scope
        handler.public = public
        responses = {status: response if response is not None else OpenApiResponse(description="OK")}
        if not public:
            responses.setdefault(401, ErrorSerializer)
        if scope:
            responses.setdefault(403, ErrorSerializer)
        desc = schema_kwargs.pop("description", "") or ""
        if scope:
            desc = (f"Required scope: `{scope}`.\n\n" + desc).strip()
        auth = [] if public else [{"bearerAuth": [scope] if scope else []}, {"cookieAuth": []}]
        extensions = {"x-required-scope": scope} if scope else None
        return extend_schema(request=request, responses=responses, summary=summary, description=desc,
                             auth=auth, extensions=extensions, **schema_kwargs)(handler)

    return wrap


# Queries ---------------------------------------------------------------------------

def query_int(request, name: str, *, default: int, minimum: int = 1, maximum: int | None = None,
              clamp: bool = True) -> int:
    """A bounded integer query parameter: 400 naming it when malformed or below range;
    above range it is clamped (contract) unless clamp=False."""
    raw = request.query_params.get(name)
    if raw in (None, ""):
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValidationFailed(f"`{name}` must be an integer.", details={name: ["Must be an integer."]})
    if value < minimum or (maximum is not None and value > maximum and not clamp):
        raise ValidationFailed(f"`{name}` must be between {minimum} and {maximum}.",
                               details={name: [f"Must be between {minimum} and {maximum}."]})
    return min(value, maximum) if maximum is not None else value


def _encode_cursor(created_at: datetime, pk) -> str:
    return base64.urlsafe_b64encode(f"{created_at.isoformat()}|{pk}".encode()).decode()


def _decode_cursor(cursor: str):
    try:
        created, pk = base64.urlsafe_b64decode(cursor.encode()).decode().split("|", 1)
        return datetime.fromisoformat(created), pk
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise ValidationFailed("`cursor` is not valid.", details={"cursor": ["Invalid cursor."]})


def cursor_page(request, queryset, serializer_class, *, context=None, order_field: str = "created_at") -> Response:
    """`{"items": [...], "nextCursor"}`, newest first, keyset-paginated on (created_at, id)."""
    from django.db.models import Q

    limit = query_int(request, "limit", default=20, maximum=100)
    cursor = request.query_params.get("cursor")
    qs = queryset.order_by(f"-{order_field}", "-pk")
    if cursor:
        created, pk = _decode_cursor(cursor)
        qs = qs.filter(Q(**{f"{order_field}__lt": created}) | Q(**{order_field: created, "pk__lt": pk}))
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

    def project(self, project_id: str):
        """A project of the URL's workspace (by id or slug); 404 otherwise."""
        from platform_app.services.projects import project_get

        return project_get(workspace=self.workspace, project_id=project_id)

    def required_scope(self, request) -> str | None:
        handler = getattr(self, request.method.lower(), None)
        return getattr(handler, "required_scope", None)

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        if not request.user.is_authenticated:
            return
        scope = self.required_scope(request)
        actor = self.actor
        if "org_id" in kwargs:
            self.workspace, self.membership = workspace_for_member(user=request.user, ref=kwargs["org_id"])
            if actor and actor.workspace_id and actor.workspace_id != self.workspace.pk:
                raise NotFound("No such workspace.")
        if actor and not scope_allows(actor.scopes, scope):
            raise InsufficientScope(scope, actor.scopes)
        if self.membership is not None and not scope_allows(ROLE_SCOPES[self.membership.role], scope):
            raise Forbidden(f"Your role ({self.membership.role}) does not allow this action.",
                            details={"role": self.membership.role, "requiredScope": scope})
