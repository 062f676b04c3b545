"""Shortlist, support tickets and dashboard figures."""
from django.db import transaction
from django.db.models import Count

from config.errors import NotFound
from warehouse_app.models import Booking, Facility, Quote, ShortlistEntry, SupportTicket, TicketReply
from warehouse_app.services.accounts import operated_facilities


@transaction.atomic
def shortlist_save(*, user, facility_slug: str, note: str | None) -> tuple[ShortlistEntry, bool]:
    """Upsert: saving twice gives one entry (the note is updated when sent)."""
    facility = Facility.objects.filter(slug=facility_slug).first()
    if facility is None:
        raise NotFound("No such facility.")
    entry, created = ShortlistEntry.objects.get_or_create(user=user, facility=facility,
                                                          defaults={"note": note or ""})
    if not created and note is not None:
        entry.note = note
        entry.save(update_fields=["note", "updated_at"])
    return entry, created


def shortlist_remove(*, user, facility_slug: str) -> None:
    deleted, _ = ShortlistEntry.objects.filter(user=user, facility__slug=facility_slug).delete()
    if not deleted:
        raise NotFound("This facility is not on your shortlist.")


@transaction.atomic
def ticket_open(*, user, subject: str, body: str) -> SupportTicket:
    ticket = SupportTicket.objects.create(user=user, subject=subject)
    TicketReply.objects.create(ticket=ticket, author=user, body=body)
    return ticket


@transaction.atomic
def ticket_reply(*, user, reference: str, body: str, from_staff: bool = False) -> SupportTicket:
    qs = SupportTicket.objects.select_for_update().filter(reference=reference)
    ticket = (qs if from_staff else qs.filter(user=user)).first()
    if ticket is None:
        raise NotFound("No such ticket.")
    TicketReply.objects.create(ticket=ticket, author=user, body=body, from_staff=from_staff)
    ticket.status = SupportTicket.Status.ANSWERED if from_staff else SupportTicket.Status.OPEN
    ticket.save(update_fields=["status"])
    return ticket


def dashboard_stats(*, user) -> dict:
    quotes = dict(Quote.objects.filter(customer=user).values_list("status").annotate(n=Count("id")))
    bookings = dict(Booking.objects.filter(customer=user).values_list("status").annotate(n=Count("id")))
    return {
        "quotes": quotes, "bookings": bookings,
        "shortlist": ShortlistEntry.objects.filter(user=user).count(),
        "open_tickets": SupportTicket.objects.filter(user=user).exclude(status="closed").count(),
        "to_answer": Quote.objects.filter(facility__in=operated_facilities(user), status=Quote.Status.PENDING).count(),
    }
