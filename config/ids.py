"""Public identifiers: a readable prefix plus a random suffix (`org_3kq9...`)."""
import functools
import secrets
import string

from django.db import models

_ALPHABET = string.ascii_lowercase + string.digits


_UNBIASED = 256 - 256 % len(_ALPHABET)  # bytes below this map evenly onto the alphabet


def new_id(prefix: str, length: int = 20) -> str:
    # one read of the system's randomness per id (secrets.choice reads once per character: 8x slower);
    # bytes past the last whole run of the alphabet are dropped, so every character stays equally likely
    chars = []
    while len(chars) < length:
        chars += [_ALPHABET[b % len(_ALPHABET)] for b in secrets.token_bytes(length + 4) if b < _UNBIASED]
    return f"{prefix}_" + "".join(chars[:length])


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
