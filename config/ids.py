"""Public identifiers: a readable prefix plus a random suffix (`org_3kq9...`)."""
import functools
import secrets
import string

from django.db import models

_ALPHABET = string.ascii_lowercase + string.digits


def new_id(prefix: str, length: int = 20) -> str:
    return f"{prefix}_" + "".join(secrets.choice(_ALPHABET) for _ in range(length))


class PrefixedIdField(models.CharField):
    """Primary key `<prefix>_<random>`; ids never reveal counts or order.

    The id is a callable default, so `save()` of a new row is a single INSERT (Django only skips its
    UPDATE-then-INSERT probe when the primary key has a default). The default stays out of migrations:
    it is code, not schema."""

    def __init__(self, *args, prefix: str = "id", **kwargs):
        self.prefix = prefix
        kwargs.setdefault("max_length", 40)
        kwargs.setdefault("primary_key", True)
        kwargs.setdefault("editable", False)
        kwargs.setdefault("default", functools.partial(new_id, prefix))
        super().__init__(*args, **kwargs)

    def deconstruct(self):
        name, path, args, kwargs = super().deconstruct()
        kwargs.pop("default", None)
        kwargs["prefix"] = self.prefix
        return name, path, args, kwargs

    def pre_save(self, model_instance, add):
        value = getattr(model_instance, self.attname)
        if not value:
            value = new_id(self.prefix)
            setattr(model_instance, self.attname, value)
        return value
