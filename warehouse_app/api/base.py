"""What every warehouse endpoint shares: cookie authentication, roles, paging.

    class QuoteListView(WarehouseView):
        session_required = True          # 401 without a signed-in account
        @paged(QuoteSerializer, summary="Your requests and answers")
        def get(self, request): return page_response(request, qs, QuoteSerializer)

Errors are raised (config.errors) and rendered as `{"error": ..., "code": ...}`.
"""
from django.core.paginator import EmptyPage, Paginator
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from config.errors import Forbidden, NotFound, Unauthenticated, ValidationFailed
from config.inputs import ascii_int
from config.openapi import WarehouseErrorSerializer
from warehouse_app.authentication import (CookieRejected, WarehouseCookieAuthentication, clear_session_cookies,
                                          set_session_cookies)
from warehouse_app.services.directory import MAX_PAGE

ErrorSerializer = WarehouseErrorSerializer  # 401, 403, 404... are derived by config.openapi; views name the rest
POSITIVE = {"type": "integer", "minimum": 1}
PAGING = [OpenApiParameter("page", {**POSITIVE, "maximum": MAX_PAGE}, description="1-based; past the end is 404"),
          OpenApiParameter("page_size", POSITIVE, description="default 20, at most 100 (larger values are clamped)")]
_PAGES: dict = {}


def errors(*statuses) -> dict:
    """`responses` entries for the errors a view answers beyond the derived ones (e.g. 429)."""
    return {status: ErrorSerializer for status in statuses}


def page_of(item_class, extra=None, name=None):
    """The schema of `page_response`: `{"results", "count", "page", "page_size", **extra}`."""
    name = name or f"Paginated{item_class.__name__.removesuffix('Serializer')}List"
    if name not in _PAGES:
        _PAGES[name] = inline_serializer(name, {
            "results": item_class(many=True), "count": serializers.IntegerField(),
            "page": serializers.IntegerField(), "page_size": serializers.IntegerField(), **(extra or {})})
        _PAGES[name].is_page = True  # config.openapi keeps the `_list` operation id
    return _PAGES[name]


def paged(item_class, *, extra=None, name=None, parameters=(), responses=None, **kwargs):
    """`@extend_schema` of a view answering `page_response(..., item_class)`."""
    return extend_schema(responses={200: page_of(item_class, extra, name), 404: ErrorSerializer, **(responses or {})},
                         parameters=[*parameters, *PAGING], **kwargs)


class WarehouseView(APIView):
    authentication_classes = [WarehouseCookieAuthentication]
    permission_classes = []
    session_required = False
    operator_required = False

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        handler = getattr(self, request.method.lower(), None)
        if handler is None:
            return
        if (self.session_required or self.operator_required) and not request.user.is_authenticated:
            raise Unauthenticated("Sign in first (POST /api/auth/login).")
        if self.operator_required and self.role not in ("operator", "owner"):
            raise Forbidden("This needs the operator or owner role.")

    @property
    def role(self) -> str:
        from warehouse_app.services.accounts import role_of

        return role_of(self.request.user)

    def handle_exception(self, exc):
        response = super().handle_exception(exc)
        if isinstance(exc, CookieRejected):
            clear_session_cookies(response)
            response.cookies_cleared = True
        return response

    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        issued = getattr(request._request, "_renewed_session", None) or getattr(request, "_renewed_session", None)
        # the refresh token was spent renewing: the new pair must reach the client whatever the answer
        if issued is not None and not getattr(response, "cookies_cleared", False):
            set_session_cookies(response, issued)
        return response


def bounded_page(request, default_size=20):
    def as_int(name, default):
        raw = request.query_params.get(name)
        if raw is None:
            return default
        value = ascii_int(raw)  # None for "", " 5", "+5", "5_0", other scripts' digits and endless numbers
        if value is None or value < 1:
            raise ValidationFailed(f"{name} must be a positive integer.")
        return value

    page = as_int("page", 1)
    if page > MAX_PAGE:
        raise ValidationFailed(f"page must be at most {MAX_PAGE}.")
    return page, min(as_int("page_size", default_size), 100)


def page_response(request, queryset, serializer_class, *, context=None, extra=None) -> Response:
    """`{"results", "count", "page", "page_size"}`; a page past the end is 404."""
    page_number, page_size = bounded_page(request)
    paginator = Paginator(queryset, page_size)
    try:
        page = paginator.page(page_number)
    except EmptyPage:
        if page_number == 1:
            page = None
        else:
            raise NotFound(f"Page {page_number} is past the end ({paginator.num_pages} pages).")
    rows = page.object_list if page is not None else []
    body = {"results": serializer_class(rows, many=True, context=context or {"request": request}).data,
            "count": paginator.count, "page": page_number, "page_size": page_size}
    body.update(extra or {})
    return Response(body)
