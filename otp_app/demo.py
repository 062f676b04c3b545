"""Demo data of the OTP service: a sandbox key for the demo workspace, printed once."""
from django.conf import settings

from otp_app.models import ApiKey
from otp_app.services.balance import balance_for
from otp_app.services.keys import otp_key_create


def load(*, user, workspace, stdout):
    balance_for(workspace)
    if ApiKey.objects.filter(workspace=workspace, mode="test", name="demo", revoked_at__isnull=True).exists():
        stdout.write("  OTP: the demo sandbox key exists (create another: manage.py otp_key create --org demo --mode test)")
        return
    _, raw = otp_key_create(workspace=workspace, mode="test", name="demo")
    stdout.write(f"  OTP sandbox key (shown once): {raw}\n"
                 f"    curl -X POST {settings.SITE_URL.rstrip('/')}/api/v1/otp/send -H 'Authorization: Bearer {raw}' "
                 "-H 'content-type: application/json' -d '{\"recipient\": \"+14155550123\", \"locale\": \"en\"}'")
