"""Client input shared by the three services: strict JSON bodies, the parse-and-validate idiom, bounded integer
query parameters. A failure is a `ValidationFailed` (400), which each service renders in its own error shape."""
import re

from rest_framework import serializers

from config.errors import ValidationFailed
from config.serializers import KeptFields

# The JSON type each field takes. DRF would also take `5` for a string, `"5"` for an integer and `"yes"`
# for a boolean; the schema promises one type, so anything else is refused.
JSON_TYPES = ((serializers.BooleanField, (bool,), "a boolean"), (serializers.IntegerField, (int,), "an integer"),
              (serializers.FloatField, (int, float), "a number"), (serializers.CharField, (str,), "a string"),
              (serializers.DateField, (str,), "a string"), (serializers.DateTimeField, (str,), "a string"),
              (serializers.ListField, (list,), "a list"), (serializers.ListSerializer, (list,), "a list"),
              (serializers.DictField, (dict,), "an object"))


def json_type_error(field, value) -> str | None:
    """Why `value` is not of the JSON type `field` takes (None when it is, or when null is left to the field)."""
    if value is None:
        return None
    for field_class, types, label in JSON_TYPES:
        if isinstance(field, field_class):
            if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
                return f"Must be {label}."
            if isinstance(field, serializers.ListField):
                errors = (json_type_error(field.child, item) for item in value)
                return next((f"Item {i}: {e}" for i, e in enumerate(errors) if e), None)
            return None
    return None


class InputSerializer(KeptFields, serializers.Serializer):
    """Rejects unknown fields, values of the wrong JSON type and non-object bodies (contract: no silent mass
    assignment)."""

    schema_extra: dict = {}  # published beside the fields (config.openapi): rules across fields, e.g. anyOf

    def to_internal_value(self, data):
        if not isinstance(data, dict):
            raise serializers.ValidationError({"non_field_errors": ["Expected a JSON object."]})
        unknown = sorted(set(data) - set(self.fields))
        if unknown:
            raise serializers.ValidationError({name: ["Unknown field."] for name in unknown})
        mistyped = {name: [error] for name, field in self.fields.items() if name in data and not field.read_only
                    and (error := json_type_error(field, data[name]))}
        if mistyped:
            raise serializers.ValidationError(mistyped)
        # maxLength holds for the value as sent: DRF checks the length after trimming surrounding whitespace
        too_long = {name: [field.error_messages["max_length"].format(max_length=field.max_length)]
                    for name, field in self.fields.items() if isinstance(data.get(name), str)
                    and getattr(field, "max_length", None) is not None and len(data[name]) > field.max_length}
        try:
            value = super().to_internal_value(data)
        except serializers.ValidationError as exc:  # reported with the fields' other errors
            raise serializers.ValidationError({**exc.detail, **too_long}) if too_long else exc
        if too_long:
            raise serializers.ValidationError(too_long)
        return value


def validated(serializer_class, data, *, context=None, **kwargs) -> dict:
    """`data` (a request's body, or a dict) checked by `serializer_class`: its validated data, or a 400."""
    serializer = serializer_class(data=getattr(data, "data", data), context=context or {}, **kwargs)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


INTEGER = re.compile(r"-?[0-9]+")
# More digits than this is no number a client means: refused before int() reads it (int() itself gives up past
# 4,300 digits with a ValueError, and a 20-digit value no longer fits the database's 64-bit integers).
INTEGER_MAX_DIGITS = 32


def ascii_int(raw: str, *, max_digits: int = INTEGER_MAX_DIGITS) -> int | None:
    """`raw` as an integer when it is ASCII digits (an optional leading minus) of at most `max_digits` digits, else
    None. int() alone would also take " 5", "+5", "5_0" and other scripts' digits ("١٢٣"), and raise past 4,300."""
    if not raw or not INTEGER.fullmatch(raw):
        return None
    digits = raw.lstrip("-").lstrip("0") or "0"
    if len(digits) > max_digits:
        return None
    return -int(digits) if raw.startswith("-") else int(digits)


def query_int(request, name: str, *, default: int, minimum: int = 1, maximum: int | None = None,
              clamp: bool = True) -> int:
    """A bounded integer query parameter: 400 naming it when malformed or below range;
    above range it is clamped (contract) unless clamp=False."""
    raw = request.query_params.get(name)
    if raw is None:
        return default
    value = ascii_int(raw)
    if value is None and clamp and maximum is not None and raw.isascii() and raw.isdigit():
        return maximum  # more digits than any bound: above the range, clamped like any larger value
    if value is None:
        raise ValidationFailed(f"`{name}` must be an integer of at most {INTEGER_MAX_DIGITS} digits.",
                               details={name: ["Must be an integer."]})
    if value < minimum or (maximum is not None and value > maximum and not clamp):
        raise ValidationFailed(f"`{name}` must be between {minimum} and {maximum}.",
                               details={name: [f"Must be between {minimum} and {maximum}."]})
    return min(value, maximum) if maximum is not None else value
