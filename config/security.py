"""Security headers of the platform's own responses (docs/settings.md, "Security headers").

It sits after the edge in MIDDLEWARE, so responses the edge serves for user deployments never pass here:
their own headers rule. Pages get CONTENT_SECURITY_POLICY (this site's scripts only, `frame-ancestors
'none'`); everything else (API JSON, the docs' init script, event streams) gets CONTENT_SECURITY_POLICY_API,
which lets a response render nothing, should a browser ever open one as a document. Django's
SecurityMiddleware and XFrameOptionsMiddleware add nosniff, Referrer-Policy, HSTS and X-Frame-Options: DENY.
A view that sets a header itself keeps its own.
"""
from django.conf import settings


class SecurityHeadersMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        page = response.get("Content-Type", "").startswith("text/html")
        # Django's debug error page runs inline script: leave it usable in development
        if not (settings.DEBUG and response.status_code >= 500):
            policy = settings.CONTENT_SECURITY_POLICY if page else settings.CONTENT_SECURITY_POLICY_API
            response.headers.setdefault("Content-Security-Policy", policy)
        response.headers.setdefault("Cross-Origin-Opener-Policy", "same-origin")
        return response
