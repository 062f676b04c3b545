import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models

import config.ids


class Migration(migrations.Migration):
    dependencies = [("platform_app", "0009_edge_firewall_analytics")]

    operations = [
        migrations.CreateModel(
            name="CronJob",
            fields=[
                ("id", config.ids.PrefixedIdField(editable=False, max_length=40, prefix="cron", primary_key=True,
                                                  serialize=False)),
                ("schedule", models.CharField(max_length=120)),
                ("timezone", models.CharField(default="UTC", max_length=64)),
                ("path", models.CharField(max_length=1024)),
                ("branch", models.CharField(blank=True, help_text="blank: the production deployment", max_length=200)),
                ("enabled", models.BooleanField(default=True)),
                ("retries", models.PositiveSmallIntegerField(default=0,
                                                             help_text="further attempts after a failed call")),
                ("secret_encrypted", models.TextField()),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                ("updated_at", models.DateTimeField(default=django.utils.timezone.now)),
                ("project", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="cron_jobs",
                                              to="platform_app.project")),
            ],
            options={"ordering": ("-created_at",)},
        ),
        migrations.CreateModel(
            name="CronRun",
            fields=[
                ("id", config.ids.PrefixedIdField(editable=False, max_length=40, prefix="crr", primary_key=True,
                                                  serialize=False)),
                ("scheduled_for", models.DateTimeField()),
                ("status", models.CharField(choices=[("queued", "Queued"), ("running", "Running"),
                                                     ("succeeded", "Succeeded"), ("failed", "Failed"),
                                                     ("skipped", "Skipped")],
                                            db_index=True, default="queued", max_length=16)),
                ("attempts", models.PositiveSmallIntegerField(default=0)),
                ("started_at", models.DateTimeField(blank=True, null=True)),
                ("finished_at", models.DateTimeField(blank=True, null=True)),
                ("duration_ms", models.PositiveIntegerField(blank=True, null=True)),
                ("status_code", models.PositiveSmallIntegerField(blank=True, null=True)),
                ("response_head", models.TextField(blank=True, help_text="the first KiB of the response body")),
                ("error", models.TextField(blank=True)),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                ("job", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="runs",
                                          to="platform_app.cronjob")),
            ],
            options={
                "ordering": ("-scheduled_for",),
                "indexes": [models.Index(fields=["job", "-scheduled_for"], name="platform_ap_job_id_861959_idx")],
                "constraints": [models.UniqueConstraint(fields=("job", "scheduled_for"),
                                                        name="cron_run_once_per_minute")],
            },
        ),
    ]
