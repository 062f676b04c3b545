"""Quotes, rates, bookings, movements, inventory, capacity, shortlist and support."""
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from config.errors import ValidationFailed
from config.inputs import InputSerializer, validated
from warehouse_app.api.base import WarehouseView, errors, page_response, paged
from warehouse_app.api.serializers import (BookingSerializer, MovementSerializer, QuoteSerializer,
                                           ShortlistSerializer, TicketSerializer)
from warehouse_app.models import Movement, Quote
from warehouse_app.services import bookings, quotes, workspace
from warehouse_app.services.selectors import customer_movements, shortlist_of, tickets_of

OK = OpenApiResponse(description="OK")


class RequirementInput(InputSerializer):
    quantity = serializers.IntegerField(min_value=1, max_value=1_000_000)
    unit = serializers.ChoiceField(choices=Quote.Unit.choices)
    start_date = serializers.DateField()
    term_months = serializers.IntegerField(min_value=1, max_value=120)
    notes = serializers.CharField(max_length=2000, required=False, allow_blank=True, default="")


class RfqInput(InputSerializer):
    facility = serializers.SlugField(max_length=120)
    requirement = RequirementInput()


class AnswerInput(InputSerializer):
    price = serializers.IntegerField(min_value=1, help_text="minor units per unit per month")
    currency = serializers.RegexField(r"^[A-Za-z]{3}$")
    unit = serializers.ChoiceField(choices=Quote.Unit.choices)
    valid_until = serializers.DateField()


class DeclineInput(InputSerializer):
    reason = serializers.CharField(max_length=2000)


class BookingCreateInput(InputSerializer):
    quote = serializers.CharField(max_length=12)
    quantity = serializers.IntegerField(min_value=1, required=False)
    term_months = serializers.IntegerField(min_value=1, max_value=120, required=False)

    def to_internal_value(self, data):
        if isinstance(data, dict) and "price" in data:
            raise serializers.ValidationError({"price": ["The price comes from the quote; it cannot be set."]})
        return super().to_internal_value(data)


class BookingUpdateInput(InputSerializer):
    quantity = serializers.IntegerField(min_value=1, required=False)
    term_months = serializers.IntegerField(min_value=1, max_value=120, required=False)


class CancelInput(InputSerializer):
    reason = serializers.CharField(max_length=2000)


class MovementInput(InputSerializer):
    booking = serializers.CharField(max_length=12)
    kind = serializers.ChoiceField(choices=Movement.Kind.choices)
    quantity = serializers.IntegerField(min_value=1, max_value=1_000_000)
    sku = serializers.CharField(max_length=64, required=False, allow_blank=True, default="")
    note = serializers.CharField(max_length=500, required=False, allow_blank=True, default="")


class ShortlistInput(InputSerializer):
    facility = serializers.SlugField(max_length=120)
    note = serializers.CharField(max_length=500, required=False, allow_blank=True, allow_null=True, default=None)


class SupportInput(InputSerializer):
    schema_extra = {"anyOf": [{"required": ["subject"]}, {"required": ["reference"]}]}
    reference = serializers.CharField(max_length=12, required=False)
    subject = serializers.CharField(max_length=200, required=False)
    body = serializers.CharField(max_length=5000)



# Rates and quotes -------------------------------------------------------------------------

class RatesView(WarehouseView):
    @extend_schema(responses={200: OK}, summary="Rates from answered quotes inside their validity window")
    def get(self, request):
        return Response({"results": quotes.rates_current()})


class RfqView(WarehouseView):
    session_required = True

    @extend_schema(request=RfqInput, responses={201: QuoteSerializer, **errors(404, 429)},
                   summary="Send a requirement to a facility (counts against the monthly allowance)")
    def post(self, request):
        v = validated(RfqInput, request)
        quote = quotes.quote_request(customer=request.user, facility_slug=v["facility"], **v["requirement"])
        return Response(QuoteSerializer(quote).data, status=201)


class QuoteListView(WarehouseView):
    session_required = True

    @paged(QuoteSerializer, summary="Your requests and answers",
           parameters=[OpenApiParameter("status", str, enum=Quote.Status.values)])
    def get(self, request):
        qs = quotes.quotes_visible_to(request.user)
        status = request.query_params.get("status")
        if status:
            if status not in Quote.Status.values:
                raise ValidationFailed(f"status must be one of {', '.join(Quote.Status.values)}.")
            qs = qs.filter(status=status)
        return page_response(request, qs, QuoteSerializer)


class QuoteDetailView(WarehouseView):
    session_required = True

    @extend_schema(responses={200: QuoteSerializer}, summary="One request with its answer")
    def get(self, request, reference):
        return Response(QuoteSerializer(quotes.quote_get(user=request.user, reference=reference)).data)


class QuoteAnswerView(WarehouseView):
    operator_required = True

    @extend_schema(request=AnswerInput, responses={200: QuoteSerializer}, summary="Price a request")
    def post(self, request, reference):
        quote = quotes.quote_answer(user=request.user, reference=reference, **validated(AnswerInput, request))
        return Response(QuoteSerializer(quote).data)


class QuoteDeclineView(WarehouseView):
    operator_required = True

    @extend_schema(request=DeclineInput, responses={200: QuoteSerializer}, summary="Decline with a reason")
    def post(self, request, reference):
        quote = quotes.quote_decline(user=request.user, reference=reference, **validated(DeclineInput, request))
        return Response(QuoteSerializer(quote).data)


# Bookings and stock ---------------------------------------------------------------------

class BookingListView(WarehouseView):
    session_required = True

    @paged(BookingSerializer, summary="Your bookings, cancelled included")
    def get(self, request):
        return page_response(request, bookings.bookings_visible_to(request.user), BookingSerializer)


class BookingCreateView(WarehouseView):
    session_required = True

    @extend_schema(request=BookingCreateInput, responses={201: BookingSerializer, **errors(404)},
                   summary="Book from an answered quote at its price")
    def post(self, request):
        v = validated(BookingCreateInput, request)
        booking = bookings.booking_create(customer=request.user, quote_reference=v["quote"],
                                          quantity=v.get("quantity"), term_months=v.get("term_months"))
        return Response(BookingSerializer(booking).data, status=201)


class BookingDetailView(WarehouseView):
    session_required = True

    @extend_schema(responses={200: BookingSerializer}, summary="One booking")
    def get(self, request, reference):
        return Response(BookingSerializer(bookings.booking_get(user=request.user, reference=reference)).data)


class BookingUpdateView(WarehouseView):
    session_required = True

    @extend_schema(request=BookingUpdateInput, responses={200: BookingSerializer},
                   summary="Amend term or quantity (within what the quote covered)")
    def post(self, request, reference):
        v = validated(BookingUpdateInput, request)
        booking = bookings.booking_update(customer=request.user, reference=reference, quantity=v.get("quantity"),
                                          term_months=v.get("term_months"))
        return Response(BookingSerializer(booking).data)


class BookingCancelView(WarehouseView):
    session_required = True

    @extend_schema(request=CancelInput, responses={200: BookingSerializer}, summary="Cancel with a reason")
    def post(self, request, reference):
        booking = bookings.booking_cancel(customer=request.user, reference=reference, **validated(CancelInput, request))
        return Response(BookingSerializer(booking).data)


class MovementView(WarehouseView):
    session_required = True

    @paged(MovementSerializer, summary="Recorded receipts and despatches")
    def get(self, request):
        qs = customer_movements(user=request.user, limit=None)
        return page_response(request, qs, MovementSerializer)

    @extend_schema(request=MovementInput, responses={201: MovementSerializer, **errors(404)},
                   summary="Record a receipt or despatch (a despatch above on-hand is 409 with on_hand)")
    def post(self, request):
        v = validated(MovementInput, request)
        movement = bookings.movement_record(user=request.user, booking_reference=v["booking"], kind=v["kind"],
                                            quantity=v["quantity"], sku=v["sku"], note=v["note"])
        return Response(MovementSerializer(movement).data, status=201)


class InventoryView(WarehouseView):
    session_required = True

    @extend_schema(responses={200: OK}, summary="On-hand quantity per booking")
    def get(self, request):
        return Response({"results": bookings.inventory(user=request.user)})


class CapacityView(WarehouseView):
    session_required = True

    @extend_schema(responses={200: OK}, summary="Committed units by month (not free space)")
    def get(self, request):
        return Response({"results": bookings.capacity(user=request.user),
                         "note": "Units committed by live bookings per month; free space is not known."})


# Shortlist and support ------------------------------------------------------------------

class ShortlistView(WarehouseView):
    session_required = True

    @paged(ShortlistSerializer, summary="Saved facilities")
    def get(self, request):
        qs = shortlist_of(user=request.user)
        return page_response(request, qs, ShortlistSerializer)

    @extend_schema(request=ShortlistInput,
                   responses={201: ShortlistSerializer, 200: ShortlistSerializer, **errors(404)},
                   summary="Save a facility or update its note (201 first time, 200 after)")
    def post(self, request):
        v = validated(ShortlistInput, request)
        entry, created = workspace.shortlist_save(user=request.user, facility_slug=v["facility"], note=v["note"])
        return Response(ShortlistSerializer(entry).data, status=201 if created else 200)

    @extend_schema(responses={204: None, **errors(404)}, summary="Remove ?facility=<slug>; 404 when never saved",
                   parameters=[OpenApiParameter("facility", {"type": "string", "minLength": 1}, required=True)])
    def delete(self, request):
        slug = request.query_params.get("facility")
        if not slug:
            raise ValidationFailed("Name the facility: ?facility=<slug>.")
        workspace.shortlist_remove(user=request.user, facility_slug=slug)
        return Response(status=204)


class SupportView(WarehouseView):
    session_required = True

    @paged(TicketSerializer, summary="Your tickets and their replies")
    def get(self, request):
        qs = tickets_of(user=request.user)
        return page_response(request, qs, TicketSerializer)

    @extend_schema(request=SupportInput, responses={201: TicketSerializer, **errors(404)},
                   summary="Open a ticket (subject + body) or reply to one (reference + body)")
    def post(self, request):
        v = validated(SupportInput, request)
        if v.get("reference"):
            ticket = workspace.ticket_reply(user=request.user, reference=v["reference"], body=v["body"])
        elif v.get("subject"):
            ticket = workspace.ticket_open(user=request.user, subject=v["subject"], body=v["body"])
        else:
            raise ValidationFailed("Send a subject to open a ticket, or a reference to reply.")
        return Response(TicketSerializer(ticket).data, status=201)
