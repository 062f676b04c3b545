"""Several rows written in one round trip.

`write_together(record, key_row, delivery)` stores new model instances as `save(force_insert=True)` would,
and `updates=[(delivery, ["status", "tries"])]` stores fields of existing ones as `save(update_fields=...)`
would. On PostgreSQL they go as one statement (a WITH of INSERTs and UPDATEs): one round trip instead of one
per row plus BEGIN and COMMIT, and atomic as any statement is (foreign keys, which Django makes deferrable, are
checked at its end). Elsewhere, and for a model somebody listens to with pre_save/post_save, each row is saved
in turn inside a transaction.

The rows may refer to each other only through keys known before the write (a PrefixedIdField draws its id at
construction); an auto-increment key of a new row is read back and set on its instance. Unlike save(), an
update whose row is gone changes nothing and raises nothing, and a model must live in one table (no multi-table
inheritance). The text of each statement is built once per process: building it cost more than running it.
"""
from contextlib import nullcontext

from django.db import connections, router, transaction
from django.db.models import AutoField
from django.db.models.signals import post_save, pre_save

_STATEMENTS: dict = {}  # (model, update fields or None) -> (text, fields, RETURNING attribute); PostgreSQL only


def _statement(model, update_fields, quote) -> tuple[str, list, str | None]:
    key = (model, update_fields)
    if key not in _STATEMENTS:
        _STATEMENTS[key] = (_update if update_fields else _insert)(model, update_fields, quote)
    return _STATEMENTS[key]


def _insert(model, _, quote):
    """Every concrete field but an auto-increment key, which is returned."""
    meta = model._meta
    auto = meta.pk if isinstance(meta.pk, AutoField) else None
    fields = [f for f in meta.concrete_fields if f is not auto]
    columns = ", ".join(quote(f.column) for f in fields)
    returning = f" RETURNING {quote(auto.column)}" if auto else ""
    return (f"INSERT INTO {quote(meta.db_table)} ({columns}) VALUES ({', '.join(['%s'] * len(fields))}){returning}",
            fields, auto.attname if auto else None)


def _update(model, update_fields, quote):
    """The named fields, then the primary key the row is found by."""
    meta = model._meta
    fields = [meta.get_field(name) for name in update_fields]
    assignments = ", ".join(f"{quote(f.column)} = %s" for f in fields)
    return f"UPDATE {quote(meta.db_table)} SET {assignments} WHERE {quote(meta.pk.column)} = %s", fields, None


def _saved_one_by_one(obj, new: bool) -> bool:
    """Rows the single statement would store differently from save(): someone listens to their saving, or a
    new one's auto-increment key is already set."""
    sender = type(obj)
    preset_auto = new and isinstance(obj._meta.pk, AutoField) and obj.pk is not None
    return pre_save.has_listeners(sender) or post_save.has_listeners(sender) or preset_auto


def write_together(*new_rows, updates=()) -> None:
    updates = [(obj, tuple(fields)) for obj, fields in updates]
    using = router.db_for_write(type((new_rows or updates[0])[0]))
    connection = connections[using]
    if connection.vendor != "postgresql" or any(_saved_one_by_one(obj, True) for obj in new_rows) or any(
            _saved_one_by_one(obj, False) for obj, _ in updates):
        with transaction.atomic(using=using):
            for obj in new_rows:
                obj.save(force_insert=True, using=using)
            for obj, fields in updates:
                obj.save(update_fields=fields, using=using)
        return
    parts, params, autos = [], [], []
    for n, (obj, update_fields) in enumerate([(obj, None) for obj in new_rows] + updates):
        sql, fields, auto = _statement(type(obj), update_fields, connection.ops.quote_name)
        parts.append(f"s{n} AS ({sql})")
        params += [f.get_db_prep_save(f.pre_save(obj, update_fields is None), connection) for f in fields]
        if update_fields:
            params.append(obj._meta.pk.get_db_prep_value(obj.pk, connection))
        if auto:
            autos.append((obj, auto, f"(SELECT * FROM s{n})"))
    statement = f"WITH {', '.join(parts)} SELECT {', '.join(expr for *_, expr in autos) or '1'}"
    # Inside a caller's transaction a failing statement would spoil it: a savepoint keeps the failure ours.
    with transaction.atomic(using=using) if connection.in_atomic_block else nullcontext():
        with connection.cursor() as cursor:
            cursor.execute(statement, params)
            row = cursor.fetchone()
    for (obj, attname, _), value in zip(autos, row):
        setattr(obj, attname, value)
    for obj in new_rows:
        obj._state.adding, obj._state.db = False, using
