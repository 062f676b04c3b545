"""Model instances read by hand-written SQL, for the few statements every authenticated request runs.

Django compiles a queryset's SQL again for each request; for the token and membership lookups that was more CPU
than the database's own work. A statement here is written once and read into instances with `Model.from_db`, each
column through the converters the ORM would apply, so the instances are what a queryset gives.
"""
import functools

from django.db import connection


def columns(model, alias: str) -> str:
    """`alias."col", ...` for each of the model's concrete fields, in `model._meta.concrete_fields` order."""
    q = connection.ops.quote_name
    return ", ".join(f"{alias}.{q(f.column)}" for f in model._meta.concrete_fields)


def table(model) -> str:
    return connection.ops.quote_name(model._meta.db_table)


@functools.cache
def _reader(model, vendor: str) -> tuple[list, list]:
    """The model's attribute names, and (position, converters, column) of each column that needs converting."""
    names, converters = [], []
    for i, field in enumerate(model._meta.concrete_fields):
        names.append(field.attname)
        col = field.get_col(model._meta.db_table)
        functions = [*connection.ops.get_db_converters(col), *field.get_db_converters(connection)]
        if functions:
            converters.append((i, functions, col))
    return names, converters


def _instance(model, values: list):
    names, converters = _reader(model, connection.vendor)
    for i, functions, col in converters:
        for convert in functions:
            values[i] = convert(values[i], col, connection)
    return model.from_db(connection.alias, names, values)


def select_one(sql: str, params, *models) -> tuple | None:
    """The first row of `sql` as one instance of each of `models` (its columns `columns(model)` in turn, in the
    order given), then any further columns as they are; None when there is no row."""
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    if row is None:
        return None
    out, at = [], 0
    for model in models:
        width = len(model._meta.concrete_fields)
        out.append(_instance(model, list(row[at:at + width])))
        at += width
    return (*out, *row[at:])
