# A workspace's balance in purses (otp_app/services/balance.py): one row per (workspace, purse).

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('otp_app', '0008_charge_one_index'),
        ('platform_app', '0036_metering_indexes'),
    ]

    operations = [
        migrations.AddField(
            model_name='balance',
            name='purse',
            field=models.PositiveSmallIntegerField(default=0),
        ),
        migrations.AlterField(
            model_name='balance',
            name='workspace',
            field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='otp_balances', to='platform_app.workspace'),
        ),
        migrations.AddConstraint(
            model_name='balance',
            constraint=models.UniqueConstraint(fields=('workspace', 'purse'), name='otp_balance_purse_unique'),
        ),
    ]
