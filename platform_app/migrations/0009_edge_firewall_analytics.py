from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("platform_app", "0008_domains")]

    operations = []
