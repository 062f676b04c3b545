"""Output shapes of the warehouse API (snake_case)."""
from rest_framework import serializers

from config.serializers import ModelSerializer
from warehouse_app.models import Booking, Facility, Movement, Quote, ShortlistEntry, SupportTicket
from warehouse_app.services.naming import facility_display_name
from warehouse_app.services.quotes import quote_unit_mismatch


class FacilitySerializer(ModelSerializer):
    type = serializers.CharField(source="type_code")
    display_name = serializers.SerializerMethodField(help_text="`name`, or type, footprint and place when the data has none")
    osm_way_id = serializers.SerializerMethodField()
    osm_url = serializers.SerializerMethodField()

    class Meta:
        model = Facility
        fields = ("slug", "name", "display_name", "osm_way_id", "osm_url", "type", "region", "country", "city",
                  "operator", "floor_area_m2", "lat", "lon", "status")

    def get_display_name(self, obj) -> str:
        return facility_display_name(obj)

    def get_osm_way_id(self, obj) -> int | None:
        return osm_way_id(obj)

    def get_osm_url(self, obj) -> str:
        return osm_url(obj)

    def to_representation(self, obj):
        return facility_item(obj)


def osm_way_id(obj) -> int | None:
    return obj.osm_id if obj.osm_type == "way" else None


def osm_url(obj) -> str:
    return f"https://www.openstreetmap.org/{obj.osm_type}/{obj.osm_id}"


def facility_item(obj) -> dict:
    """A facility as every list and search page gives it: `FacilitySerializer`'s fields written out directly,
    without DRF's per-field walk (a third of a search's time in Python; the schema still comes from the
    declarations)."""
    return {"slug": obj.slug, "name": obj.name, "display_name": facility_display_name(obj),
            "osm_way_id": osm_way_id(obj), "osm_url": osm_url(obj), "type": obj.type_code,
            "region": obj.region, "country": obj.country, "city": obj.city, "operator": obj.operator,
            "floor_area_m2": float(obj.floor_area_m2), "lat": float(obj.lat), "lon": float(obj.lon),
            "status": obj.status}


class FacilityDetailSerializer(FacilitySerializer):
    osm_relation_id = serializers.SerializerMethodField()

    class Meta(FacilitySerializer.Meta):
        fields = FacilitySerializer.Meta.fields + ("osm_relation_id", "outline", "imported_at")

    def to_representation(self, obj):
        return serializers.ModelSerializer.to_representation(self, obj)

    def get_osm_relation_id(self, obj) -> int | None:
        return obj.osm_id if obj.osm_type == "relation" else None


class FacilityBriefSerializer(ModelSerializer):
    type = serializers.CharField(source="type_code")
    display_name = serializers.SerializerMethodField()

    class Meta:
        model = Facility
        fields = ("slug", "name", "display_name", "type", "city", "region", "country", "floor_area_m2", "status")

    def get_display_name(self, obj) -> str:
        return facility_display_name(obj)


class QuoteSerializer(ModelSerializer):
    facility = FacilityBriefSerializer()
    requirement = serializers.SerializerMethodField()
    answer = serializers.SerializerMethodField()
    unit_mismatch = serializers.SerializerMethodField(
        help_text="null, or {requested, quoted, note} when the answer prices another unit than the request")

    class Meta:
        model = Quote
        fields = ("reference", "facility", "requirement", "status", "answer", "unit_mismatch", "decline_reason",
                  "created_at")

    def get_requirement(self, obj) -> dict:
        return {"quantity": obj.quantity, "unit": obj.unit, "start_date": obj.start_date,
                "term_months": obj.term_months, "notes": obj.notes}

    def get_answer(self, obj) -> dict | None:
        if obj.price is None:
            return None
        return {"price": obj.price, "currency": obj.currency, "unit": obj.price_unit, "valid_until": obj.valid_until}

    def get_unit_mismatch(self, obj) -> dict | None:
        return quote_unit_mismatch(obj)


class BookingSerializer(ModelSerializer):
    facility = FacilityBriefSerializer()
    quote = serializers.CharField(source="quote.reference")

    class Meta:
        model = Booking
        fields = ("reference", "quote", "facility", "quantity", "unit", "start_date", "term_months", "price",
                  "currency", "status", "cancel_reason", "created_at", "cancelled_at")


class MovementSerializer(ModelSerializer):
    booking = serializers.CharField(source="booking.reference")

    class Meta:
        model = Movement
        fields = ("id", "booking", "kind", "quantity", "sku", "note", "created_at")


class ShortlistSerializer(ModelSerializer):
    facility = FacilitySerializer()

    class Meta:
        model = ShortlistEntry
        fields = ("facility", "note", "created_at", "updated_at")


class TicketSerializer(ModelSerializer):
    replies = serializers.SerializerMethodField()

    class Meta:
        model = SupportTicket
        fields = ("reference", "subject", "status", "created_at", "replies")

    def get_replies(self, obj) -> list:
        return [{"body": r.body, "from_staff": r.from_staff, "created_at": r.created_at} for r in obj.replies.all()]
