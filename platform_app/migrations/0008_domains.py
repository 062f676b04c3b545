"""Custom domains of projects and their DNS checks."""
import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models

import config.ids


class Migration(migrations.Migration):
    dependencies = [("platform_app", "0007_admin_labels")]

    operations = [
        migrations.CreateModel(
            name="Domain",
            fields=[
                ("id", config.ids.PrefixedIdField(editable=False, max_length=40, prefix="dom", primary_key=True,
                                                  serialize=False)),
                ("name", models.CharField(help_text="lower-case ASCII (IDN as punycode)", max_length=253)),
                ("status", models.CharField(choices=[("pending", "Pending"), ("verified", "Verified"),
                                                     ("misconfigured", "Misconfigured")],
                                            default="pending", max_length=16)),
                ("status_changed_at", models.DateTimeField(default=django.utils.timezone.now)),
                ("verification_token", models.CharField(max_length=64)),
                ("primary", models.BooleanField(default=False,
                                                help_text="the project's other domains redirect here (308)")),
                ("redirect_to", models.CharField(blank=True, help_text="another domain of the project (308)",
                                                 max_length=253)),
                ("git_branch", models.CharField(blank=True, help_text="serve the latest ready deployment of this "
                                                                      "branch instead of production", max_length=200)),
                ("verified_at", models.DateTimeField(blank=True, help_text="first verification", null=True)),
                ("last_check_at", models.DateTimeField(blank=True, null=True)),
                ("last_check_found", models.JSONField(blank=True, default=list,
                                                      help_text='[{"type", "value"}] the last check saw')),
                ("last_check_error", models.CharField(blank=True, help_text="resolver failure of the last check",
                                                      max_length=200)),
                ("check_failures", models.PositiveIntegerField(
                    default=0, help_text="checks in a row that found nothing (backoff)")),
                ("next_check_at", models.DateTimeField(db_index=True, default=django.utils.timezone.now)),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                ("project", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="domains",
                                              to="platform_app.project")),
            ],
            options={
                "ordering": ("name",),
                "indexes": [models.Index(fields=["project", "-created_at"], name="platform_ap_project_179a94_idx")],
                "constraints": [models.UniqueConstraint(fields=("name",), name="domain_unique_name")],
            },
        ),
    ]
