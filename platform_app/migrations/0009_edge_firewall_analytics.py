"""The edge: firewall rules and events, web analytics events and rollups."""
import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models

import config.ids


class Migration(migrations.Migration):
    dependencies = [("platform_app", "0008_domains")]

    operations = [
        migrations.CreateModel(
            name='AnalyticsSettings',
            fields=[
                ('project', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, primary_key=True, related_name='analytics_settings', serialize=False, to='platform_app.project')),
                ('enabled', models.BooleanField(default=False)),
                ('updated_at', models.DateTimeField(default=django.utils.timezone.now)),
            ],
            options={
                'verbose_name_plural': 'analytics settings',
            },
        ),
        migrations.CreateModel(
            name='AnalyticsEvent',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('type', models.CharField(choices=[('pageview', 'Pageview'), ('vital', 'Vital')], max_length=8)),
                ('path', models.CharField(max_length=512)),
                ('referrer', models.CharField(blank=True, help_text='the referring host name only', max_length=253)),
                ('name', models.CharField(blank=True, help_text='vital: LCP, INP, CLS, TTFB, FCP', max_length=8)),
                ('value', models.FloatField(blank=True, null=True)),
                ('visitor', models.CharField(max_length=32)),
                ('at', models.DateTimeField(default=django.utils.timezone.now)),
                ('project', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='analytics_events', to='platform_app.project')),
            ],
            options={
                'indexes': [models.Index(fields=['project', 'at'], name='analytics_event_project_at'), models.Index(fields=['at'], name='analytics_event_at')],
            },
        ),
        migrations.CreateModel(
            name='AnalyticsVisitor',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('day', models.DateField()),
                ('visitor', models.CharField(max_length=32)),
                ('page_views', models.PositiveIntegerField(default=0)),
                ('paths', models.JSONField(default=dict, help_text='{path: page views}')),
                ('referrer', models.CharField(blank=True, max_length=253)),
                ('first_at', models.DateTimeField()),
                ('project', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='analytics_visitors', to='platform_app.project')),
            ],
            options={
                'indexes': [models.Index(fields=['project', 'day'], name='analytics_visitor_day')],
                'constraints': [models.UniqueConstraint(fields=('project', 'day', 'visitor'), name='analytics_visitor_unique')],
            },
        ),
        migrations.CreateModel(
            name='AnalyticsVitalHour',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('hour', models.DateTimeField()),
                ('path', models.CharField(max_length=512)),
                ('name', models.CharField(max_length=8)),
                ('histogram', models.JSONField(default=dict)),
                ('samples', models.PositiveIntegerField(default=0)),
                ('project', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='analytics_vitals', to='platform_app.project')),
            ],
            options={
                'indexes': [models.Index(fields=['project', 'hour'], name='analytics_vital_hour')],
                'constraints': [models.UniqueConstraint(fields=('project', 'hour', 'path', 'name'), name='analytics_vital_unique')],
            },
        ),
        migrations.CreateModel(
            name='FirewallEvent',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('rule_id', models.CharField(help_text="the rule's id (it may have been deleted since)", max_length=32)),
                ('action', models.CharField(max_length=16)),
                ('ip', models.CharField(max_length=45)),
                ('method', models.CharField(max_length=16)),
                ('path', models.CharField(max_length=512)),
                ('user_agent', models.CharField(blank=True, max_length=512)),
                ('at', models.DateTimeField(default=django.utils.timezone.now)),
                ('project', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='firewall_events', to='platform_app.project')),
            ],
            options={
                'ordering': ('-at', '-id'),
                'indexes': [models.Index(fields=['project', 'at'], name='firewall_event_project_at'), models.Index(fields=['at'], name='firewall_event_at')],
            },
        ),
        migrations.CreateModel(
            name='FirewallRule',
            fields=[
                ('id', config.ids.PrefixedIdField(editable=False, max_length=40, prefix='fwr', primary_key=True, serialize=False)),
                ('name', models.CharField(max_length=100)),
                ('priority', models.IntegerField(default=100, help_text='lower runs first')),
                ('enabled', models.BooleanField(default=True)),
                ('action', models.CharField(choices=[('allow', 'Allow'), ('deny', 'Deny'), ('challenge', 'Challenge'), ('rate_limit', 'Rate Limit')], max_length=16)),
                ('conditions', models.JSONField(blank=True, default=list, help_text='[{"field": "ip|path|method|header|user_agent", "op": "eq|prefix|glob|cidr|contains", "value": "...", "name": "header"}]')),
                ('rate_limit_requests', models.PositiveIntegerField(blank=True, null=True)),
                ('rate_limit_window_seconds', models.PositiveIntegerField(blank=True, null=True)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('updated_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('project', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='firewall_rules', to='platform_app.project')),
            ],
            options={
                'ordering': ('priority', 'created_at'),
                'indexes': [models.Index(fields=['project', 'priority'], name='firewall_rule_project')],
            },
        ),
    ]
