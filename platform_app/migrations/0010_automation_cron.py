from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("platform_app", "0009_edge_firewall_analytics")]

    operations = []
