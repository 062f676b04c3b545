"""New rows of several models in one round trip.

`insert_together(record, key_row, delivery)` stores new model instances as `save(force_insert=True)` would, one
after another. On PostgreSQL it sends them as one statement (a WITH of INSERTs): one round trip instead of one
per row plus BEGIN and COMMIT, and atomic without a transaction of its own, since a statement either commits
whole or not at all (foreign keys, which Django makes deferrable, are checked at its end). Elsewhere, and for a
model somebody listens to with pre_save/post_save, it saves them one by one in a transaction.

The rows may refer to each other only through keys already known before the insert (a PrefixedIdField draws
its id at construction); an auto-increment key is read back and set on its instance. The INSERT text of each
model is built once per process: building it cost more than running it.
"""
from contextlib import nullcontext as _nothing

from django.db import connections, router, transaction
from django.db.models import AutoField
from django.db.models.signals import post_save, pre_save


_STATEMENTS: dict = {}  # model -> what _insert_sql returns (PostgreSQL only, so one quoting rule)


def _insert_sql(model, connection) -> tuple[str, list, str | None]:
    """INSERT text for every concrete field of `model` but an auto-increment key, whose attribute name it also
    returns (RETURNING that key)."""
    if model not in _STATEMENTS:
        _STATEMENTS[model] = _build(model, connection.ops.quote_name)
    return _STATEMENTS[model]


def _build(model, quote) -> tuple[str, list, str | None]:
    meta = model._meta
    auto = meta.pk if isinstance(meta.pk, AutoField) else None
    fields = [f for f in meta.concrete_fields if f is not auto]
    columns = ", ".join(quote(f.column) for f in fields)
    values = ", ".join(["%s"] * len(fields))
    returning = f" RETURNING {quote(auto.column)}" if auto else ""
    return (f"INSERT INTO {quote(meta.db_table)} ({columns}) VALUES ({values}){returning}",
            fields, auto.attname if auto else None)


def _saved_one_by_one(obj) -> bool:
    """Rows the single statement would store differently from save(): someone listens to their saving, or
    their auto-increment key is already set."""
    sender = type(obj)
    auto = isinstance(obj._meta.pk, AutoField)
    return pre_save.has_listeners(sender) or post_save.has_listeners(sender) or (auto and obj.pk is not None)


def insert_together(*objs) -> None:
    using = router.db_for_write(type(objs[0]))
    connection = connections[using]
    if connection.vendor != "postgresql" or any(map(_saved_one_by_one, objs)):
        with transaction.atomic(using=using):
            for obj in objs:
                obj.save(force_insert=True, using=using)
        return
    parts, params, autos = [], [], []
    for n, obj in enumerate(objs):
        sql, fields, auto = _insert_sql(type(obj), connection)
        parts.append(f"s{n} AS ({sql})")
        params += [f.get_db_prep_save(f.pre_save(obj, True), connection) for f in fields]
        if auto:
            autos.append((obj, auto, f"(SELECT * FROM s{n})"))
    statement = f"WITH {', '.join(parts)} SELECT {', '.join(expr for *_, expr in autos) or '1'}"
    # Inside a caller's transaction a failing statement would spoil it: a savepoint keeps the failure ours.
    with transaction.atomic(using=using) if connection.in_atomic_block else _nothing():
        with connection.cursor() as cursor:
            cursor.execute(statement, params)
            row = cursor.fetchone()
    for (obj, attname, _), value in zip(autos, row):
        setattr(obj, attname, value)
    for obj in objs:
        obj._state.adding, obj._state.db = False, using
