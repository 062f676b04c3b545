"""Caddy's on-demand TLS `ask` (docs/deployment.md, "Caddy"): GET /internal/caddy/ask?domain=<name> answers
200 when the platform wants a certificate for that name (a verified custom domain) and 404 otherwise, so Caddy
never asks a certificate authority for a name nobody verified. Plain HTTP, not part of the /v1 schema: Caddy
sends no credentials, and the answer only says what the edge serves anyway."""
from django.http import HttpResponse
from django.views.decorators.http import require_GET

from platform_app.services.domains.routing import tls_allowed


@require_GET
def caddy_ask(request):
    if tls_allowed(request.GET.get("domain", "")):
        return HttpResponse("ok", content_type="text/plain")
    return HttpResponse("no certificate for this name", status=404, content_type="text/plain")
