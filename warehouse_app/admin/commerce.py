"""Admin of accounts, quotes, bookings, stock, tickets (staff reply here) and counters."""
from django.contrib import admin

from warehouse_app.models import (Booking, Movement, OperatorFacility, Quote, ShortlistEntry, SupportTicket,
                                  TicketReply, UsageCounter, WarehouseProfile)
from warehouse_app.services.workspace import ticket_reply


@admin.register(WarehouseProfile)
class WarehouseProfileAdmin(admin.ModelAdmin):
    list_display = ("user", "role", "plan")
    list_filter = ("role", "plan")
    search_fields = ("user__email",)
    list_select_related = ("user",)
    raw_id_fields = ("user",)


@admin.register(OperatorFacility)
class OperatorFacilityAdmin(admin.ModelAdmin):
    list_display = ("user", "facility")
    search_fields = ("user__email", "facility__slug")
    list_select_related = ("user", "facility")
    raw_id_fields = ("user", "facility")


@admin.register(Quote)
class QuoteAdmin(admin.ModelAdmin):
    list_display = ("reference", "customer", "facility", "quantity", "unit", "status", "price", "currency",
                    "valid_until", "created_at")
    list_filter = ("status", "unit")
    search_fields = ("reference", "customer__email", "facility__slug")
    list_select_related = ("customer", "facility")
    raw_id_fields = ("customer", "facility", "answered_by")


class MovementInline(admin.TabularInline):
    model = Movement
    extra = 0
    can_delete = False
    readonly_fields = ("kind", "quantity", "sku", "note", "created_by", "created_at")


@admin.register(Booking)
class BookingAdmin(admin.ModelAdmin):
    list_display = ("reference", "customer", "facility", "quantity", "unit", "price", "currency", "status",
                    "start_date", "term_months")
    list_filter = ("status",)
    search_fields = ("reference", "customer__email", "facility__slug")
    list_select_related = ("customer", "facility")
    raw_id_fields = ("customer", "facility", "quote")
    inlines = [MovementInline]


@admin.register(Movement)
class MovementAdmin(admin.ModelAdmin):
    list_display = ("booking", "kind", "quantity", "sku", "created_at")
    list_filter = ("kind",)
    search_fields = ("booking__reference", "sku")
    list_select_related = ("booking",)
    raw_id_fields = ("booking", "created_by")


@admin.register(ShortlistEntry)
class ShortlistEntryAdmin(admin.ModelAdmin):
    list_display = ("user", "facility", "note", "updated_at")
    search_fields = ("user__email", "facility__slug")
    list_select_related = ("user", "facility")
    raw_id_fields = ("user", "facility")


class TicketReplyInline(admin.TabularInline):
    model = TicketReply
    extra = 0
    readonly_fields = ("author", "from_staff", "body", "created_at")
    can_delete = False


@admin.register(SupportTicket)
class SupportTicketAdmin(admin.ModelAdmin):
    list_display = ("reference", "user", "subject", "status", "created_at")
    list_filter = ("status",)
    search_fields = ("reference", "user__email", "subject")
    list_select_related = ("user",)
    raw_id_fields = ("user",)
    inlines = [TicketReplyInline]
    actions = ["reply_resolved"]

    @admin.action(description="Reply “We have looked into this; it is resolved.”")
    def reply_resolved(self, request, queryset):
        for ticket in queryset:
            ticket_reply(user=request.user, reference=ticket.reference, from_staff=True,
                         body="We have looked into this; it is resolved.")


@admin.register(TicketReply)
class TicketReplyAdmin(admin.ModelAdmin):
    list_display = ("ticket", "author", "from_staff", "created_at")
    list_filter = ("from_staff",)
    search_fields = ("ticket__reference", "author__email", "body")
    list_select_related = ("ticket", "author")
    # staff answer through the ticket's action (the service also reopens/answers the ticket)
    readonly_fields = ("ticket", "author", "from_staff", "body", "created_at")

    def has_add_permission(self, request):
        return False


@admin.register(UsageCounter)
class UsageCounterAdmin(admin.ModelAdmin):
    list_display = ("user", "period", "kind", "used")
    list_filter = ("kind", "period")
    search_fields = ("user__email",)
    list_select_related = ("user",)
    raw_id_fields = ("user",)
