import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models

import config.ids


class Migration(migrations.Migration):
    dependencies = [("platform_app", "0010_automation_cron")]

    operations = [
        migrations.CreateModel(
            name="LogDrain",
            fields=[
                ("id", config.ids.PrefixedIdField(editable=False, max_length=40, prefix="drn", primary_key=True,
                                                  serialize=False)),
                ("url", models.CharField(max_length=2048)),
                ("format", models.CharField(choices=[("json", "Json"), ("ndjson", "Ndjson")], default="json",
                                            max_length=8)),
                ("sources", models.JSONField(default=list)),
                ("environments", models.JSONField(blank=True, default=list, help_text="empty: every environment")),
                ("sampling_rate", models.FloatField(default=1.0)),
                ("secret_encrypted", models.TextField()),
                ("status", models.CharField(choices=[("active", "Active"), ("paused", "Paused")], db_index=True,
                                            default="active", max_length=8)),
                ("last_delivery_at", models.DateTimeField(blank=True, null=True)),
                ("last_error", models.TextField(blank=True)),
                ("failures", models.PositiveIntegerField(default=0, help_text="consecutive failed deliveries")),
                ("next_attempt_at", models.DateTimeField(blank=True, null=True)),
                ("lease_until", models.DateTimeField(blank=True, help_text="a worker is delivering until then",
                                                     null=True)),
                ("build_cursor", models.BigIntegerField(default=0, help_text="last delivered LogLine id")),
                ("runtime_cursor", models.BigIntegerField(default=0, help_text="last delivered RuntimeLogLine id")),
                ("firewall_cursor", models.BigIntegerField(default=0, help_text="last delivered FirewallEvent id")),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                ("project", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="log_drains",
                                              to="platform_app.project")),
            ],
            options={"ordering": ("-created_at",)},
        ),
        migrations.CreateModel(
            name="LogDrainDelivery",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("at", models.DateTimeField(default=django.utils.timezone.now)),
                ("lines", models.PositiveIntegerField(default=0)),
                ("test", models.BooleanField(default=False)),
                ("delivered", models.BooleanField(default=False)),
                ("status_code", models.PositiveSmallIntegerField(blank=True, null=True)),
                ("duration_ms", models.PositiveIntegerField(default=0)),
                ("error", models.TextField(blank=True)),
                ("drain", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="deliveries",
                                            to="platform_app.logdrain")),
            ],
            options={"verbose_name_plural": "log drain deliveries", "ordering": ("-at", "-pk")},
        ),
        migrations.CreateModel(
            name="AlertRule",
            fields=[
                ("id", config.ids.PrefixedIdField(editable=False, max_length=40, prefix="alr", primary_key=True,
                                                  serialize=False)),
                ("name", models.CharField(max_length=100)),
                ("metric", models.CharField(choices=[
                    ("deployment_failed", "Deployment Failed"), ("build_duration", "Build Duration"),
                    ("edge_5xx_rate", "Edge 5Xx Rate"), ("edge_p95_latency", "Edge P95 Latency"),
                    ("cron_failed", "Cron Failed"), ("instance_down", "Instance Down"),
                    ("domain_misconfigured", "Domain Misconfigured"), ("usage_cap", "Usage Cap")], max_length=32)),
                ("threshold", models.FloatField()),
                ("window_minutes", models.PositiveIntegerField(default=5)),
                ("channels", models.JSONField(default=list)),
                ("secret_encrypted", models.TextField(help_text="signs webhook notifications")),
                ("state", models.CharField(choices=[("ok", "Ok"), ("firing", "Firing")], default="ok", max_length=8)),
                ("last_value", models.FloatField(blank=True, null=True)),
                ("last_evaluated_at", models.DateTimeField(blank=True, null=True)),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                ("project", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="alert_rules",
                                              to="platform_app.project")),
            ],
            options={"ordering": ("-created_at",)},
        ),
        migrations.CreateModel(
            name="Alert",
            fields=[
                ("id", config.ids.PrefixedIdField(editable=False, max_length=40, prefix="alt", primary_key=True,
                                                  serialize=False)),
                ("value", models.FloatField(blank=True, null=True)),
                ("source", models.CharField(default="evaluation", help_text="evaluation or fire (internal route)",
                                            max_length=16)),
                ("message", models.TextField(blank=True)),
                ("fired_at", models.DateTimeField(default=django.utils.timezone.now)),
                ("resolved_at", models.DateTimeField(blank=True, null=True)),
                ("notifications", models.JSONField(blank=True, default=list,
                                                   help_text="what was sent: kind, channel, target, ok, error, at")),
                ("rule", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="alerts",
                                           to="platform_app.alertrule")),
            ],
            options={
                "ordering": ("-fired_at",),
                "constraints": [models.UniqueConstraint(condition=models.Q(("resolved_at__isnull", True)),
                                                        fields=("rule",), name="alert_one_open_per_rule")],
            },
        ),
    ]
