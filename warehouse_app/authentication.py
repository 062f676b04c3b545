"""Cookie authentication of the warehouse API.

`ws-access-token` is an RS256 JWT of the platform's identity provider (audience `warehouse`),
verified on every request against the JWKS (local keys, or WAREHOUSE_JWKS_URL). A token that fails
is a 401 that clears the cookies — never an anonymous request. An expired access token with a valid
`ws-refresh-token` is renewed transparently: the response carries the new cookies.

CSRF: login sets `ws-csrf-token` (readable by scripts); a cookie-authenticated write must echo it in
the `X-CSRF-Token` header (double submit). JSON clients read the cookie and send the header.
"""
import hmac
import secrets

from django.conf import settings
from rest_framework.authentication import BaseAuthentication

from config.errors import ApplicationError, Unauthenticated
from platform_app.services.identity.auth import session_active, session_refresh
from platform_app.services.identity.keys import token_verify

SESSION_KIND = "warehouse"  # a platform session of this kind, registered in apps.py
ACCESS, REFRESH, CSRF = "ws-access-token", "ws-refresh-token", "ws-csrf-token"
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


class CookieRejected(Unauthenticated):
    """A present but unusable cookie: 401 and the cookies are cleared."""


class CsrfFailed(ApplicationError):
    status, code, default_message = 403, "csrf_failed", "Send the ws-csrf-token cookie's value in X-CSRF-Token."


def set_session_cookies(response, issued) -> None:
    secure = not settings.DEBUG
    response.set_cookie(ACCESS, issued.access_token, max_age=issued.expires_in + 60 * 60 * 24 * 30, httponly=True,
                        samesite="Lax", secure=secure, path="/")
    response.set_cookie(REFRESH, issued.refresh_token, max_age=settings.WAREHOUSE_REFRESH_COOKIE_DAYS * 86400,
                        httponly=True, samesite="Lax", secure=secure, path="/api/")
    response.set_cookie(CSRF, secrets.token_urlsafe(24), max_age=settings.WAREHOUSE_REFRESH_COOKIE_DAYS * 86400,
                        httponly=False, samesite="Lax", secure=secure, path="/")


def clear_session_cookies(response) -> None:
    response.delete_cookie(ACCESS, path="/", samesite="Lax")
    response.delete_cookie(REFRESH, path="/api/", samesite="Lax")
    response.delete_cookie(CSRF, path="/", samesite="Lax")


class WarehouseCookieAuthentication(BaseAuthentication):
    def authenticate(self, request):
        access = request.COOKIES.get(ACCESS)
        refresh = request.COOKIES.get(REFRESH)
        if not access and not refresh:
            return None  # anonymous: fine on public routes
        try:
            claims = token_verify(access or "", audience="warehouse", jwks_url=settings.WAREHOUSE_JWKS_URL)
        except Unauthenticated as exc:
            if exc.code != "token_expired" and access:
                raise CookieRejected(exc.message, code=exc.code)
            if not refresh:
                raise CookieRejected(exc.message, code=exc.code)
            try:
                issued = session_refresh(refresh_token=refresh, kind=SESSION_KIND)
            except Unauthenticated as refresh_exc:
                raise CookieRejected(refresh_exc.message, code=refresh_exc.code)
            request._renewed_session = issued  # the view sets the new cookies on its response
            user, session = issued.user, issued.session
        else:
            try:
                session = session_active(claims.get("sid", ""))
            except Unauthenticated as exc:
                raise CookieRejected(exc.message, code=exc.code)
            user = session.user
        self._enforce_csrf(request)
        return user, session

    def _enforce_csrf(self, request):
        if request.method in SAFE_METHODS:
            return
        cookie = request.COOKIES.get(CSRF, "")
        header = request.headers.get("X-CSRF-Token", "")
        if not cookie or not hmac.compare_digest(cookie, header):
            raise CsrfFailed()

    def authenticate_header(self, request):
        return 'Cookie realm="warehouse"'

    # Published on every write this cookie can authenticate (config.openapi): the double-submit pair.
    schema_write_parameters = [
        {"in": "header", "name": "X-CSRF-Token", "schema": {"type": "string"},
         "description": f"The `{CSRF}` cookie's value; required when the session cookie is sent."},
        {"in": "cookie", "name": CSRF, "schema": {"type": "string"}, "description": "Set by POST /api/auth/login."},
    ]


from drf_spectacular.extensions import OpenApiAuthenticationExtension  # noqa: E402


class WarehouseCookieScheme(OpenApiAuthenticationExtension):
    target_class = "warehouse_app.authentication.WarehouseCookieAuthentication"
    name = "wsAccessCookie"

    def get_security_definition(self, auto_schema):
        return {"type": "apiKey", "in": "cookie", "name": ACCESS,
                "description": "Set by POST /api/auth/login; writes also need the X-CSRF-Token header."}

    def get_security_requirement(self, auto_schema):
        view = auto_schema.view
        if getattr(view, "session_required", False) or getattr(view, "operator_required", False):
            return {self.name: []}
        return [{self.name: []}, {}]  # public: a cookie, when sent, is checked
