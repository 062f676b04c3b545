"""Serializers whose fields are built once per class.

DRF builds every field of a serializer again for each instance (a ModelSerializer reads its model's options, a
plain one deep-copies its declared fields), which cost a list of twenty projects more than reading them. A flat
field (no child field, no nested serializer or relation) keeps nothing of one use for the next, and binding sets a
copy's own name and parent: where every field is flat, shallow copies of fields built once per class serve.
"""
import copy

from rest_framework import serializers

_PROTOTYPES: dict = {}  # serializer class -> its fields built once, or None when one of them is not flat


def _flat(field) -> bool:
    return not isinstance(field, serializers.BaseSerializer) and not hasattr(field, "child") and not hasattr(
        field, "child_relation")  # List/DictField, a many relation


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


class ModelSerializer(KeptFields, serializers.ModelSerializer):
    pass
