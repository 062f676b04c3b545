"""Integers in query expressions, as 64-bit values.

A bare int in an expression (`F("amount") + n`, `Greatest(..., Value(n))`) is a Value of IntegerField, which
Django hands to psycopg as a 4-byte int4 when parameters are bound on the server (config/settings/base.py): on
PostgreSQL 3,000,000,000 becomes -1,294,967,296, silently. Balances, byte counters and memory peaks pass that.
"""
from django.db.models import BigIntegerField, F, Value


def big(n: int) -> Value:
    """`n` as a bigint parameter."""
    return Value(n, output_field=BigIntegerField())


def plus(field: str, n: int):
    """`field + n` for an UPDATE, n as a bigint."""
    return F(field) + big(n)
