"""config/inputs.py: an InputSerializer builds its flat fields once per class and hands each instance copies,
which must behave as DRF's per-instance deep copies do: own binding, own context, own changes."""
import pytest
from rest_framework import serializers

from config.inputs import InputSerializer, validated


class _ContextDefault:
    requires_context = True

    def __call__(self, field):
        return field.context["who"]


class Flat(InputSerializer):
    name = serializers.CharField(max_length=5)
    owner = serializers.CharField(default=_ContextDefault())
    size = serializers.IntegerField(required=False, min_value=1)


class Nested(InputSerializer):
    tags = serializers.ListField(child=serializers.CharField(max_length=3))


def test_each_instance_binds_its_own_copies_and_sees_its_own_context():
    first, second = Flat(data={}, context={"who": "ann"}), Flat(data={}, context={"who": "bob"})
    assert first.fields["name"] is not second.fields["name"]
    assert first.fields["name"].parent is first and second.fields["name"].parent is second
    assert validated(Flat, {"name": "abc"}, context={"who": "ann"}) == {"name": "abc", "owner": "ann"}
    assert validated(Flat, {"name": "abc"}, context={"who": "bob"}) == {"name": "abc", "owner": "bob"}


def test_the_copies_validate_as_declared_and_a_change_to_one_stays_in_it():
    with pytest.raises(serializers.ValidationError) as long_name:
        validated(Flat, {"name": "toolong", "size": 0}, context={"who": "ann"})
    assert set(long_name.value.detail) == {"name", "size"}  # max_length and min_value, from the shared validators
    changed = Flat(data={"owner": "x"}, context={})
    changed.fields["name"].required = False
    assert changed.is_valid(), changed.errors
    with pytest.raises(serializers.ValidationError):  # the next instance still requires it
        validated(Flat, {"owner": "x"})


def test_a_serializer_with_a_child_field_keeps_drf_s_own_copies():
    assert validated(Nested, {"tags": ["a", "bc"]}) == {"tags": ["a", "bc"]}
    with pytest.raises(serializers.ValidationError):
        validated(Nested, {"tags": ["long"]})
    first, second = Nested(data={}), Nested(data={})
    assert first.fields["tags"].child is not second.fields["tags"].child
    assert first.fields["tags"].child.parent is first.fields["tags"]
