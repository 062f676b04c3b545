"""The objects every route-access case points its path parameters at: alice's workspace `acme` with one of
each thing a route can name, charlie's own workspace, an OTP key and record, a warehouse quote and booking."""
import re
from dataclasses import dataclass
from datetime import date, timedelta

from django.apps import apps
from django.utils import timezone

from platform_app.models import (Addon, AgentNode, AlertRule, Component, CronJob, Deployment, DeployHook,
                                 DoctorReport, Environment, EnvVar, LogDrain, SecretFinding, Volume)
from platform_app.models import Domain, Feedback, Incident, IpAllowlistEntry
from platform_app.services.identity.auth import session_start
from platform_app.services.env.crypto import encrypt
from platform_app.services.identity.keys import sha256_hex
from tests.factories import ApiTokenFactory, MembershipFactory, UserFactory, WorkspaceFactory
from tests.otp_app.factories import ApiKeyFactory
from tests.platform_app.billing.factories import InvoiceFactory, TaxIdFactory
from tests.platform_app.edge.factories import FirewallRuleFactory
from tests.platform_app.projects.factories import ProjectFactory, ProjectGroupFactory
from tests.platform_app.resources.factories_buckets import BucketFactory
from tests.platform_app.resources.dedicated_dbs_fixtures import DedicatedDatabaseFactory
from tests.platform_app.teams.factories import InvitationFactory
from tests.warehouse_app.factories import FacilityFactory

HOOK_SECRET = "hook-secret-route-access-000000000000"
INVITATION_TOKEN = "invitation-route-access-000000"


@dataclass
class World:
    alice: object
    charlie: object
    charlie_access: str
    alice_access: str
    path_values: dict  # path parameter → value; "<path> <param>" for a name two routes use differently


def world_build() -> World:
    from django_otp.plugins.otp_totp.models import TOTPDevice
    from otp_app.models import OtpRecord
    from warehouse_app.models import Booking, Quote

    acme = WorkspaceFactory(slug="acme", name="Acme")
    alice = UserFactory(email="alice@example.com", name="Alice")
    MembershipFactory(workspace=acme, user=alice, role="owner")
    bob = MembershipFactory(workspace=acme, user=UserFactory(email="bob@example.com"), role="developer")
    charlie = UserFactory(email="charlie@example.com", name="Charlie")
    MembershipFactory(workspace=WorkspaceFactory(slug="charlies"), user=charlie, role="owner")

    project = ProjectFactory(workspace=acme, slug="web")
    deployment = Deployment.objects.create(project=project, branch="main", status=Deployment.Status.ERROR)
    report = DoctorReport.objects.create(deployment=deployment)
    env_var = EnvVar.objects.create(project=project, key="API_URL", value_encrypted=encrypt("x"),
                                    targets=["production"])
    environment = Environment.objects.create(project=project, name="staging")
    finding = SecretFinding.objects.create(project=project, fingerprint="f" * 64, rule="aws-key", file="app.py",
                                           line=1, preview="AKIA****")
    hook = DeployHook.objects.create(project=project, name="ci", branch="main", secret_hash=sha256_hex(HOOK_SECRET))
    group = ProjectGroupFactory(workspace=acme, slug="front")
    token = ApiTokenFactory(user=alice, workspace=acme)
    node = AgentNode.objects.create(workspace=acme, name="node-1", token_hash=sha256_hex("agent-route-access"))
    domain = Domain.objects.create(project=project, name="www.example.com", verification_token="0" * 32)
    cron_job = CronJob.objects.create(project=project, schedule="*/5 * * * *", path="/api/cron",
                                      secret_encrypted=encrypt("cron-secret"))
    drain = LogDrain.objects.create(project=project, url="https://logs.example.com/in", sources=["build"],
                                    secret_encrypted=encrypt("drain-secret"))
    alert_rule = AlertRule.objects.create(project=project, name="failures", metric="deployment_failed", threshold=1,
                                          channels=[{"type": "email", "to": ["ops@example.com"]}],
                                          secret_encrypted=encrypt("alert-secret"))
    firewall_rule = FirewallRuleFactory(project=project)
    addon = Addon.objects.create(project=project, kind="postgres", name="db")
    component = Component.objects.create(project=project, name="api", kind="web", start_command="node app.js",
                                         instance_size="starter")
    volume = Volume.objects.create(component=component, name="data", mount_path="/data", size_gb=1)
    bucket = BucketFactory(project=project)
    dedicated_db = DedicatedDatabaseFactory(project=project, name="main")
    invoice = InvoiceFactory(workspace=acme)
    tax_id = TaxIdFactory(workspace=acme)
    InvitationFactory(workspace=acme, invited_by=alice, email="dana@example.com", raw=INVITATION_TOKEN)
    # the test client's own address: every org route below passes through a non-empty allowlist
    allowlist_entry = IpAllowlistEntry.objects.create(workspace=acme, cidr="127.0.0.1/32", note="test client")
    feedback = Feedback.objects.create(message="It works", category="idea")
    device = TOTPDevice.objects.create(user=alice, name="phone", confirmed=True)
    incident = Incident.objects.create(title="Builds slow", impact="minor", components=["builds"])
    alice_session = session_start(user=alice)

    key = ApiKeyFactory(workspace=acme, mode="test")
    record = OtpRecord.objects.create(api_key=key, workspace=acme, mode="test", recipient="+14155550123",
                                      channel="sms", code_hash="0" * 64, attempts_left=3,
                                      expires_at=timezone.now() + timedelta(minutes=10))

    facility = FacilityFactory()
    terms = {"customer": alice, "facility": facility, "quantity": 10, "unit": "pallet",
             "start_date": date.today() + timedelta(days=30), "term_months": 3}
    quote = Quote.objects.create(**terms)
    booked = Quote.objects.create(**terms, status=Quote.Status.BOOKED, price=500, currency="USD")
    booking = Booking.objects.create(**terms, quote=booked, price=500, currency="USD")

    values = {
        "org_id": acme.pk, "project_id": project.pk, "deployment_id": deployment.pk, "report_id": report.pk,
        "env_id": env_var.pk, "environment_id": environment.pk, "finding_id": finding.pk, "hook_id": hook.pk,
        "slug": group.slug, "token_id": token.pk, "member_id": bob.pk, "node_id": node.pk, "provider": "git-a",
        "factor_id": f"totp_{device.pk}", "session_id": alice_session.session.pk, "token": INVITATION_TOKEN,
        "secret": HOOK_SECRET, "record_id": record.pk,
        "domain_id": domain.pk,
        "cron_id": cron_job.pk, "drain_id": drain.pk, "bucket_id": bucket.pk,
        "addon_id": addon.pk, "component_id": component.pk, "volume_id": volume.pk,
        "db_id": dedicated_db.pk,
        "/v1/admin/incidents/{id} id": incident.pk, "/v1/admin/orgs/{ref} ref": acme.pk,
        "entry_id": allowlist_entry.pk, "feedback_id": feedback.pk, "org": acme.slug,
        "invoice_id": invoice.pk, "tax_id_id": tax_id.pk, "pm_id": "pm_routeaccess",
        "/v1/orgs/{org_id}/projects/{project_id}/alerts/{rule_id} rule_id": alert_rule.pk,
        "/v1/orgs/{org_id}/projects/{project_id}/firewall/rules/{rule_id} rule_id": firewall_rule.pk,
        "/api/warehouses/{slug} slug": facility.slug,
        "/api/quotes/{reference} reference": quote.reference,
        "/api/bookings/{reference} reference": booking.reference,
    }
    return World(alice=alice, charlie=charlie, charlie_access=session_start(user=charlie).access_token,
                 alice_access=alice_session.access_token,
                 path_values=values)


def fill(path: str, values: dict) -> str:
    """`/v1/orgs/{org_id}/...` with the world's ids; a route whose parameter has no value fails loudly."""

    def value(match):
        name = match.group(1)
        prefix = path[: match.end()]
        for key in (f"{prefix} {name}", f"{path} {name}", name):
            if key in values:
                return str(values[key])
        raise KeyError(f"no value for {{{name}}} in {path}: add it to world_build")

    return re.sub(r"\{(\w+)\}", value, path)


def row_counts() -> dict:
    """Rows of every table of the three apps: an unauthorised request must leave them all as they were."""
    return {model._meta.label: model._default_manager.count()
            for app in ("platform_app", "otp_app", "warehouse_app")
            for model in apps.get_app_config(app).get_models() if model._meta.managed}

