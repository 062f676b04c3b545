"""Serializers whose fields are built once per class, and whose plain fields are read without DRF's per-field
machinery.

DRF builds every field of a serializer again for each instance (a ModelSerializer reads its model's options, a
plain one deep-copies its declared fields), which cost a list of twenty projects more than reading them. A flat
field (no child field, no nested serializer or relation) keeps nothing of one use for the next, and binding sets a
copy's own name and parent: where every field is flat, shallow copies of fields built once per class serve.

Answering, DRF asks each field for its attribute (a generic lookup that also tries mappings and calls callables),
then converts it, asking the active time zone again for each timestamp. A field that reads one attribute of a model
and converts it as DRF would (text, integers, booleans, JSON, timestamps in the API's format, method fields) is read
directly; any other field, or a value that is not the plain case (a callable, a missing attribute), goes through DRF.
"""
import copy
from collections.abc import Mapping
from datetime import datetime

from django.utils import timezone
from rest_framework import serializers
from rest_framework.fields import SkipField
from rest_framework.relations import PKOnlyObject
from rest_framework.settings import api_settings

_PROTOTYPES: dict = {}  # serializer class -> its fields built once, or None when one of them is not flat
_PLANS: dict = {}  # (serializer class, its field names) -> [(field name, attribute, kind)] of the readable ones
_MISSING = object()
_KINDS = {serializers.CharField: "text", serializers.EmailField: "text", serializers.URLField: "text",
          serializers.SlugField: "text", serializers.IntegerField: "integer", serializers.BooleanField: "boolean",
          serializers.JSONField: "json", serializers.DateTimeField: "timestamp"}


def _flat(field) -> bool:
    return not isinstance(field, serializers.BaseSerializer) and not hasattr(field, "child") and not hasattr(
        field, "child_relation")  # List/DictField, a many relation


def _kind(field) -> str:
    if isinstance(field, serializers.SerializerMethodField):
        return "method"
    kind = _KINDS.get(type(field))
    if kind is None or len(field.source_attrs) != 1 or field.source == "*":
        return "drf"
    if kind == "json" and field.binary:
        return "drf"
    if kind == "timestamp" and (getattr(field, "format", api_settings.DATETIME_FORMAT) != api_settings.DATETIME_FORMAT
                                or hasattr(field, "timezone") or api_settings.DATETIME_FORMAT.lower() == "iso-8601"):
        return "drf"
    return kind


def _drf(field, instance, ret: dict) -> None:
    """What DRF's Serializer.to_representation does for one field."""
    try:
        attribute = field.get_attribute(instance)
    except SkipField:
        return
    check_for_none = attribute.pk if isinstance(attribute, PKOnlyObject) else attribute
    ret[field.field_name] = None if check_for_none is None else field.to_representation(attribute)


class KeptFields:
    def get_fields(self):
        cls = type(self)
        if cls not in _PROTOTYPES:
            fields = super().get_fields()
            _PROTOTYPES[cls] = fields if all(_flat(f) for f in fields.values()) else None
        prototypes = _PROTOTYPES[cls]
        if prototypes is None:
            return super().get_fields()
        return {name: copy.copy(field) for name, field in prototypes.items()}

    def to_representation(self, instance):
        if isinstance(instance, Mapping):
            return super().to_representation(instance)
        fields = self.fields
        key = (type(self), tuple(fields))  # a serializer that changed its fields gets its own plan
        if key not in _PLANS:
            _PLANS[key] = [(f.field_name, f.source_attrs[0] if f.source_attrs else None, _kind(f))
                           for f in self._readable_fields]
        ret, zone = {}, None
        for name, attribute, kind in _PLANS[key]:
            field = fields[name]
            if kind == "method":
                ret[name] = getattr(self, field.method_name)(instance)
                continue
            value = _MISSING if kind == "drf" else getattr(instance, attribute, _MISSING)
            if value is _MISSING or callable(value):
                _drf(field, instance, ret)
            elif value is None:
                ret[name] = None
            elif kind == "text":
                ret[name] = str(value)
            elif kind == "integer":
                ret[name] = int(value)
            elif kind == "boolean" and isinstance(value, bool):
                ret[name] = value
            elif kind == "json":
                ret[name] = value
            elif kind == "timestamp" and isinstance(value, datetime) and timezone.is_aware(value):
                zone = zone or timezone.get_current_timezone()
                ret[name] = value.astimezone(zone).strftime(api_settings.DATETIME_FORMAT)
            else:
                _drf(field, instance, ret)
        return ret


class ModelSerializer(KeptFields, serializers.ModelSerializer):
    pass
