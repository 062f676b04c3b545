"""Several rows written in one round trip.

`write_together(record, key_row, delivery)` stores new model instances as `save(force_insert=True)` would,
and `updates=[(delivery, ["status", "tries"])]` stores fields of existing ones as `save(update_fields=...)`
would. On PostgreSQL they go as one statement (a WITH of INSERTs and UPDATEs): one round trip instead of one
per row plus BEGIN and COMMIT, and atomic as any statement is (foreign keys, which Django makes deferrable, are
checked at its end). Elsewhere, and for a model somebody listens to with pre_save/post_save, each row is saved
in turn inside a transaction.

`only_if=(sql, params)` makes the write conditional on a boolean SQL expression read in the same statement
(elsewhere: first in the same transaction): when it is false nothing is written and write_together returns
False. A rule such as "fewer than N failed records" then costs no round trip of its own.

`take=(update_sql, params)` is an `UPDATE ... WHERE <enough is left>` (ending in its WHERE) that must change one
row for the rows to be written (a balance's hold): on PostgreSQL it is one more part of the same statement, run
only when `only_if` holds, so its row lock lasts one statement and not a transaction of several round trips. When
it changes nothing, nothing is written and `NothingTaken` is raised.

The rows may refer to each other only through keys known before the write (a PrefixedIdField draws its id at
construction); an auto-increment key of a new row is read back and set on its instance. Unlike save(), an
update whose row is gone changes nothing and raises nothing, and a model must live in one table (no multi-table
inheritance). The text of each statement is built once per process: building it cost more than running it.
"""
import re
from contextlib import nullcontext

from django.db import connections, router, transaction
from django.db.models import AutoField
from django.db.models.signals import post_save, pre_save

# (model, update fields or None, guarded) -> (text, fields, RETURNING attribute); PostgreSQL only
_STATEMENTS: dict = {}
GUARD = "(SELECT ok FROM guard)"  # the only_if expression's value, as the guarded statements read it


class NothingTaken(Exception):
    """`take` changed no row (not enough was left): nothing was written."""


def _statement(model, update_fields, guarded, connection) -> tuple[str, list, str | None]:
    key = (model, update_fields, guarded)
    if key not in _STATEMENTS:
        _STATEMENTS[key] = (_update if update_fields else _insert)(model, update_fields, guarded, connection)
    return _STATEMENTS[key]


def _insert(model, _, guarded, connection):
    """Every concrete field but an auto-increment key, which is returned. Guarded, the row comes from a SELECT
    whose parameters are cast to their columns' types: unlike VALUES, a SELECT list would take them as text."""
    meta, quote = model._meta, connection.ops.quote_name
    auto = meta.pk if isinstance(meta.pk, AutoField) else None
    fields = [f for f in meta.concrete_fields if f is not auto]
    columns = ", ".join(quote(f.column) for f in fields)
    if guarded:
        row = f"SELECT {', '.join(f'%s::{_param_type(f, connection)}' for f in fields)} WHERE {GUARD}"
    else:
        row = f"VALUES ({', '.join(['%s'] * len(fields))})"
    returning = f" RETURNING {quote(auto.column)}" if auto else ""
    return f"INSERT INTO {quote(meta.db_table)} ({columns}) {row}{returning}", fields, auto.attname if auto else None


def _param_type(field, connection) -> str:
    # a cast to varchar(n) would cut a long value short, where storing it fails as it should
    return re.sub(r"^(varchar|character varying)\(\d+\)$", r"\1", field.cast_db_type(connection))


def _update(model, update_fields, guarded, connection):
    """The named fields, then the primary key the row is found by."""
    meta, quote = model._meta, connection.ops.quote_name
    fields = [meta.get_field(name) for name in update_fields]
    assignments = ", ".join(f"{quote(f.column)} = %s" for f in fields)
    condition = f" AND {GUARD}" if guarded else ""
    return (f"UPDATE {quote(meta.db_table)} SET {assignments} WHERE {quote(meta.pk.column)} = %s{condition}",
            fields, None)


def _saved_one_by_one(obj, new: bool) -> bool:
    """Rows the single statement would store differently from save(): someone listens to their saving, or a
    new one's auto-increment key is already set."""
    sender = type(obj)
    preset_auto = new and isinstance(obj._meta.pk, AutoField) and obj.pk is not None
    return pre_save.has_listeners(sender) or post_save.has_listeners(sender) or preset_auto


def write_together(*new_rows, updates=(), only_if: tuple[str, list] | None = None,
                   take: tuple[str, list] | None = None) -> bool:
    """Write the rows; False when `only_if` was false and nothing was written (NothingTaken: see `take`)."""
    updates = [(obj, tuple(fields)) for obj, fields in updates]
    using = router.db_for_write(type((new_rows or updates[0])[0]))
    connection = connections[using]
    if connection.vendor != "postgresql" or any(_saved_one_by_one(obj, True) for obj in new_rows) or any(
            _saved_one_by_one(obj, False) for obj, _ in updates):
        with transaction.atomic(using=using):
            if only_if is not None:
                with connection.cursor() as cursor:
                    cursor.execute(f"SELECT {only_if[0]}", only_if[1])
                    if not cursor.fetchone()[0]:
                        return False
            if take is not None:
                with connection.cursor() as cursor:
                    cursor.execute(*take)
                    if cursor.rowcount != 1:
                        raise NothingTaken()
            for obj in new_rows:
                obj.save(force_insert=True, using=using)
            for obj, fields in updates:
                obj.save(update_fields=fields, using=using)
        return True
    guarded = only_if is not None or take is not None
    parts, params, autos = [], [], []
    if take is not None:
        # the rule first, then the take only where the rule holds: the guard is both
        parts.append(f"rule AS (SELECT {only_if[0] if only_if else 'true'} AS ok)")
        params += only_if[1] if only_if else []
        parts.append(f"took AS ({take[0]} AND (SELECT ok FROM rule) RETURNING 1)")
        params += take[1]
        parts.append("guard AS (SELECT (SELECT ok FROM rule) AND EXISTS (SELECT 1 FROM took) AS ok)")
    elif guarded:
        parts.append(f"guard AS (SELECT {only_if[0]} AS ok)")
        params += only_if[1]
    for n, (obj, update_fields) in enumerate([(obj, None) for obj in new_rows] + updates):
        sql, fields, auto = _statement(type(obj), update_fields, guarded, connection)
        parts.append(f"s{n} AS ({sql})")
        params += [f.get_db_prep_save(f.pre_save(obj, update_fields is None), connection) for f in fields]
        if update_fields:
            params.append(obj._meta.pk.get_db_prep_value(obj.pk, connection))
        if auto:
            autos.append((obj, auto, f"(SELECT * FROM s{n})"))
    selected = [GUARD] if guarded else []
    if take is not None:
        selected.append("(SELECT ok FROM rule)")
    selected += [expr for *_, expr in autos]
    statement = f"WITH {', '.join(parts)} SELECT {', '.join(selected) or '1'}"
    # Inside a caller's transaction a failing statement would spoil it: a savepoint keeps the failure ours.
    with transaction.atomic(using=using) if connection.in_atomic_block else nullcontext():
        with connection.cursor() as cursor:
            cursor.execute(statement, params)
            row = cursor.fetchone()
    if take is not None:
        ok, rule_ok, *row = row
        if not ok:
            if rule_ok:
                raise NothingTaken()
            return False
    elif guarded:
        ok, *row = row
        if not ok:
            return False
    for (obj, attname, _), value in zip(autos, row):
        setattr(obj, attname, value)
    for obj in new_rows:
        obj._state.adding, obj._state.db = False, using
    return True
