"""Migration operations of our own."""
from django.contrib.postgres.operations import AddIndexConcurrently
from django.db.migrations.operations import AddIndex


class AddIndexConcurrentlyWherePossible(AddIndexConcurrently):
    """`CREATE INDEX CONCURRENTLY` on PostgreSQL, so a big table's writers are not locked out while it builds (its
    migration must be `atomic = False`); a plain `CREATE INDEX` on SQLite, the embedded default."""

    def database_forwards(self, app_label, schema_editor, from_state, to_state):
        if schema_editor.connection.vendor == "postgresql":
            return super().database_forwards(app_label, schema_editor, from_state, to_state)
        return AddIndex.database_forwards(self, app_label, schema_editor, from_state, to_state)

    def database_backwards(self, app_label, schema_editor, from_state, to_state):
        if schema_editor.connection.vendor == "postgresql":
            return super().database_backwards(app_label, schema_editor, from_state, to_state)
        return AddIndex.database_backwards(self, app_label, schema_editor, from_state, to_state)
