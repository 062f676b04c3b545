from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("platform_app", "0011_automation_drains_alerts")]

    operations = [
        migrations.AlterField(
            model_name="authsession",
            name="kind",
            field=models.CharField(default="platform", help_text="platform, or the kind a product registered "
                                   "(warehouse cookie sessions)", max_length=16),
        ),
    ]
