"""Admin of custom domains (the verification token is shown: it is published in DNS anyway). Staff check DNS
through the same service as the API's verify; names, primary and redirects change only through the services."""
from django.contrib import admin, messages

from config import ratelimit
from platform_app.admin.base import ThroughServicesAdmin
from platform_app.models import Domain
from platform_app.services.domains.domains import domain_check


@admin.register(Domain)
class DomainAdmin(ThroughServicesAdmin):
    list_display = ("name", "project", "status", "primary", "redirect_to", "git_branch", "last_check_at",
                    "next_check_at")
    list_filter = ("status", "primary")
    search_fields = ("name", "project__slug")
    list_select_related = ("project",)
    raw_id_fields = ("project",)
    actions = ["check_dns"]

    @admin.action(description="Check DNS now")
    def check_dns(self, request, queryset):
        for domain in queryset:
            checked = domain_check(domain=domain, actor=request.user, ip=ratelimit.client_ip(request))
            found = ", ".join(f"{r['type']} {r['value']}" for r in checked.last_check_found) or "nothing"
            self.message_user(request, f"{checked.name}: {checked.status} (found {found})",
                              messages.SUCCESS if checked.verified else messages.WARNING)
