# Build log rows are written while a build runs and deleted once it is archived: on PostgreSQL the table is
# vacuumed after a fixed number of dead rows, not PostgreSQL's default fifth of the table (400,000 dead rows at two
# million), so the space they leave is reused by the next builds' lines and the table stays the same size.

from django.db import migrations

TABLE = "platform_app_logline"


def vacuum_often(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"ALTER TABLE {TABLE} SET (autovacuum_vacuum_scale_factor = 0, "
                              f"autovacuum_vacuum_threshold = 20000)")


def vacuum_by_default(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"ALTER TABLE {TABLE} RESET (autovacuum_vacuum_scale_factor, "
                              f"autovacuum_vacuum_threshold)")


class Migration(migrations.Migration):

    dependencies = [
        ('platform_app', '0034_deployment_runtime_ready'),
    ]

    operations = [migrations.RunPython(vacuum_often, vacuum_by_default)]
