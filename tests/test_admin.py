"""The Django admin: every model of the three apps is registered, and a staff superuser opens each list and
change page; the deployment actions go through the same services as the API."""
import pytest
from django.apps import apps
from django.contrib import admin
from django.contrib.admin.utils import quote
from django.contrib.auth.models import Group
from django.urls import reverse
from django_otp.plugins.otp_totp.models import TOTPDevice

from otp_app import models as otp
from platform_app import models as platform
from platform_app.models import AuditEvent, Deployment, DeploymentEvent
from tests import factories as base
from tests.otp_app import factories as otp_factories
from tests.platform_app.agents import factories as agents
from tests.platform_app.automation import factories as automation
from tests.platform_app.billing import factories as billing
from tests.platform_app.deployments import factories as deploy
from tests.platform_app.domains import factories as domains
from tests.platform_app.edge import factories as edge
from tests.platform_app.env import factories as env
from tests.platform_app.identity import factories as identity
from tests.platform_app.mcp import factories as mcp
from tests.platform_app.org import factories as org
from tests.platform_app.resources import factories as resources
from tests.platform_app.staff import factories as staff_factories
from tests.platform_app.projects import factories as projects
from tests.platform_app.resources import factories_buckets as buckets
from tests.platform_app.resources import factories_graduation as graduation
from tests.platform_app.providers import factories as git
from tests.platform_app.resources import dedicated_dbs_fixtures as dedicated_dbs
from tests.platform_app.resources import tunnel_factories as tunnels
from tests.platform_app.teams import factories as teams
from tests.warehouse_app import factories as wh
from warehouse_app import models as warehouse

pytestmark = pytest.mark.django_db

APPS = ("platform_app", "otp_app", "warehouse_app")

FACTORIES = {
    Group: base.GroupFactory, TOTPDevice: identity.TOTPDeviceFactory,
    platform.User: base.UserFactory, platform.Workspace: base.WorkspaceFactory,
    platform.AnswerStamp: base.AnswerStampFactory,
    platform.Membership: base.MembershipFactory, platform.ApiToken: base.ApiTokenFactory,
    platform.AuthSession: identity.AuthSessionFactory, platform.RefreshToken: identity.RefreshTokenFactory,
    platform.AttemptCounter: identity.AttemptCounterFactory, platform.AuditEvent: identity.AuditEventFactory,
    platform.ProjectGroup: projects.ProjectGroupFactory, platform.Project: projects.ProjectFactory,
    platform.Invitation: teams.InvitationFactory,
    platform.Deployment: deploy.DeploymentFactory, platform.SourceUpload: deploy.SourceUploadFactory, platform.DeploymentEvent: deploy.DeploymentEventFactory,
    platform.LogLine: deploy.LogLineFactory, platform.RuntimeLogLine: deploy.RuntimeLogLineFactory,
    platform.DeployHook: deploy.DeployHookFactory, platform.WebhookDelivery: deploy.WebhookDeliveryFactory,
    platform.DoctorReport: deploy.DoctorReportFactory, platform.AgentInvite: agents.AgentInviteFactory,
    platform.AgentNode: agents.AgentNodeFactory, platform.Instance: agents.InstanceFactory,
    platform.BuildJob: deploy.BuildJobFactory,
    platform.Addon: resources.AddonFactory, platform.Component: resources.ComponentFactory,
    platform.Volume: resources.VolumeFactory,
    platform.McpClient: mcp.McpClientFactory, platform.McpAuthorizationCode: mcp.McpAuthorizationCodeFactory,
    platform.DeviceAuthorization: identity.DeviceAuthorizationFactory,
    platform.McpToken: mcp.McpTokenFactory,
    platform.Incident: staff_factories.IncidentFactory, platform.IncidentUpdate: staff_factories.IncidentUpdateFactory,
    platform.ProbeSample: staff_factories.ProbeSampleFactory, platform.ProbeHour: staff_factories.ProbeHourFactory,
    platform.Price: billing.PriceFactory, platform.UsageRecord: billing.UsageRecordFactory,
    platform.BillingAccount: billing.BillingAccountFactory, platform.Invoice: billing.InvoiceFactory,
    platform.TaxId: billing.TaxIdFactory, platform.PaymentEvent: billing.PaymentEventFactory,
    platform.DeploymentVisit: billing.DeploymentVisitFactory,
    platform.OAuthState: git.OAuthStateFactory, platform.GitConnection: git.GitConnectionFactory,
    platform.GitInstallation: git.GitInstallationFactory, platform.LinkedIdentity: git.LinkedIdentityFactory,
    platform.Environment: env.EnvironmentFactory, platform.EnvVar: env.EnvVarFactory,
    platform.EnvVarSlot: env.EnvVarSlotFactory, platform.SecretFinding: env.SecretFindingFactory,
    platform.PreviewProtection: env.PreviewProtectionFactory,
    platform.Domain: domains.DomainFactory,
    platform.FirewallRule: edge.FirewallRuleFactory, platform.FirewallEvent: edge.FirewallEventFactory,
    platform.AnalyticsSettings: edge.AnalyticsSettingsFactory, platform.AnalyticsEvent: edge.AnalyticsEventFactory,
    platform.AnalyticsVisitor: edge.AnalyticsVisitorFactory, platform.AnalyticsVitalHour: edge.AnalyticsVitalHourFactory,
    platform.CronJob: automation.CronJobFactory, platform.CronRun: automation.CronRunFactory,
    platform.LogDrain: automation.LogDrainFactory, platform.LogDrainDelivery: automation.LogDrainDeliveryFactory,
    platform.AlertRule: automation.AlertRuleFactory, platform.Alert: automation.AlertFactory,
    platform.Bucket: buckets.BucketFactory, platform.Graduation: graduation.GraduationFactory,
    platform.GraduationRedemption: graduation.GraduationRedemptionFactory,
    platform.DedicatedDatabase: dedicated_dbs.DedicatedDatabaseFactory,
    platform.DedicatedDatabaseBackup: dedicated_dbs.DedicatedDatabaseBackupFactory,
    platform.Tunnel: tunnels.TunnelFactory, platform.TunnelConnection: tunnels.TunnelConnectionFactory,
    platform.TunnelRequest: tunnels.TunnelRequestFactory,
    platform.WorkspaceSso: org.WorkspaceSsoFactory, platform.SsoIdentity: org.SsoIdentityFactory,
    platform.SsoSession: org.SsoSessionFactory, platform.IpAllowlistEntry: org.IpAllowlistEntryFactory,
    platform.ScimUser: org.ScimUserFactory, platform.ScimGroup: org.ScimGroupFactory,
    platform.Feedback: org.FeedbackFactory, platform.GrowthEvent: org.GrowthEventFactory,
    platform.WeeklyReview: org.WeeklyReviewFactory,
    otp.ApiKey: otp_factories.ApiKeyFactory, otp.OtpRecord: otp_factories.OtpRecordFactory,
    otp.Delivery: otp_factories.DeliveryFactory, otp.IdempotencyKey: otp_factories.IdempotencyKeyFactory,
    otp.Balance: otp_factories.BalanceFactory, otp.Charge: otp_factories.ChargeFactory,
    otp.SandboxMessage: otp_factories.SandboxMessageFactory, otp.RoutingRule: otp_factories.RoutingRuleFactory,
    otp.WorkspacePolicy: otp_factories.WorkspacePolicyFactory,
    warehouse.Facility: wh.FacilityFactory, warehouse.DirectoryFacet: wh.DirectoryFacetFactory,
    warehouse.ImportRun: wh.ImportRunFactory, warehouse.WarehouseProfile: wh.WarehouseProfileFactory,
    warehouse.OperatorFacility: wh.OperatorFacilityFactory, warehouse.Quote: wh.QuoteFactory,
    warehouse.Booking: wh.BookingFactory, warehouse.Movement: wh.MovementFactory,
    warehouse.ShortlistEntry: wh.ShortlistEntryFactory, warehouse.SupportTicket: wh.SupportTicketFactory,
    warehouse.TicketReply: wh.TicketReplyFactory, warehouse.UsageCounter: wh.UsageCounterFactory,
}


def _url(model, view: str, *args) -> str:
    # admin URLs escape "_" in primary keys, and every prefixed id has one
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_{view}", args=[quote(a) for a in args])


@pytest.fixture
def staff(client):
    client.force_login(base.SuperuserFactory(email="staff@example.com"))
    return client


def test_every_model_is_registered_and_has_a_factory():
    models = [m for name in APPS for m in apps.get_app_config(name).get_models()]
    assert [m._meta.label for m in models if m not in admin.site._registry] == []
    assert [m._meta.label for m in admin.site._registry if m not in FACTORIES] == []


def test_plural_labels():
    assert str(platform.LinkedIdentity._meta.verbose_name_plural) == "linked identities"
    assert str(otp.WorkspacePolicy._meta.verbose_name_plural) == "workspace policies"
    assert str(warehouse.OperatorFacility._meta.verbose_name_plural) == "operator facilities"
    assert str(platform.WebhookDelivery._meta.verbose_name_plural) == "webhook deliveries"


@pytest.mark.parametrize("model", list(admin.site._registry), ids=lambda m: m._meta.label)
def test_staff_opens_list_and_change_page(staff, model):
    obj = FACTORIES[model]()
    res = staff.get(_url(model, "changelist"))
    assert res.status_code == 200
    assert res.context["cl"].result_count >= 1
    res = staff.get(_url(model, "change", obj.pk))
    assert res.status_code == 200
    assert res.context["original"].pk == obj.pk
    if admin.site._registry[model].has_add_permission(res.wsgi_request):
        assert staff.get(_url(model, "add")).status_code == 200


def test_index_and_help_texts_render(staff):
    body = staff.get(reverse("admin:index")).content.decode()
    assert "Linked identities" in body and "Workspace policies" in body and "Operator facilities" in body
    project = projects.ProjectFactory(slug="shop")
    body = staff.get(_url(platform.Project, "change", project.pk)).content.decode()
    assert "DNS label: {slug}.{DEPLOY_DOMAIN} serves production." in body


def test_non_staff_is_sent_to_login(client):
    client.force_login(base.UserFactory())
    res = client.get(_url(Deployment, "changelist"))
    assert res.status_code == 302 and "/admin/login/" in res["Location"]


def test_deployment_list_has_no_n_plus_one(staff, django_assert_max_num_queries):
    for n in range(12):
        deploy.DeploymentFactory(project=projects.ProjectFactory(), status=("ready", "error", "queued")[n % 3])
    with django_assert_max_num_queries(12):
        res = staff.get(_url(Deployment, "changelist"))
    assert res.status_code == 200 and res.context["cl"].result_count == 12
    filtered = staff.get(_url(Deployment, "changelist"), {"status__exact": "error"})
    assert filtered.context["cl"].result_count == 4


def test_deployment_page_shows_events_and_the_last_log_lines(staff):
    deployment = deploy.DeploymentFactory(status="error")
    deploy.DeploymentEventFactory(deployment=deployment, type="error", message="npm exited with 1")
    for n in range(1, 251):
        deploy.LogLineFactory(deployment=deployment, seq=n, text=f"line number {n:03d}")
    body = staff.get(_url(Deployment, "change", deployment.pk)).content.decode()
    assert "npm exited with 1" in body
    assert "line number 250" in body and "line number 051" in body
    assert "line number 050" not in body  # only the last 200


def _act(staff, action: str, *deployments):
    return staff.post(_url(Deployment, "changelist"),
                      {"action": action, "_selected_action": [d.pk for d in deployments]}, follow=True)


def _messages(res) -> list[str]:
    return [str(m) for m in res.context["messages"]]


def test_cancel_action(staff):
    queued = deploy.DeploymentFactory()
    ready = deploy.DeploymentFactory(status="ready")
    res = _act(staff, "cancel", queued, ready)
    assert res.status_code == 200
    queued.refresh_from_db()
    ready.refresh_from_db()
    assert queued.status == "canceled" and queued.finished_at is not None
    assert DeploymentEvent.objects.get(deployment=queued, type="canceled").message == "canceled by staff@example.com"
    assert ready.status == "ready"
    assert sorted(_messages(res)) == sorted([f"{queued.pk}: canceled.",
                                             f"{ready.pk}: The deployment already ended (ready)."])


def test_redeploy_action(staff):
    failed = deploy.DeploymentFactory(status="error", env="production", branch="release")
    res = _act(staff, "redeploy", failed)
    new = Deployment.objects.exclude(pk=failed.pk).get()
    assert (new.project, new.env, new.branch, new.status, new.trigger) == (
        failed.project, "production", "release", "queued", "manual")
    assert new.created_by.email == "staff@example.com"
    assert AuditEvent.objects.get(action="deployment.created").target_id == new.pk
    assert _messages(res) == [f"{failed.pk}: redeploy queued as {new.pk}."]


def test_redeploy_action_reports_the_service_refusal(staff):
    image = deploy.DeploymentFactory(project=projects.ProjectFactory(source="image", git_url=""))
    res = _act(staff, "redeploy", image)
    assert Deployment.objects.count() == 1
    assert _messages(res) == [f"{image.pk}: This project has no Git repository to build."]


def test_rollback_action(staff):
    project = projects.ProjectFactory(slug="shop")
    old = deploy.DeploymentFactory(project=project, status="ready", env="production")
    current = deploy.DeploymentFactory(project=project, status="ready", env="production")
    building = deploy.DeploymentFactory(project=project, status="building", env="production")
    project.production_deployment = current
    project.save()
    res = _act(staff, "rollback", old)
    project.refresh_from_db()
    assert project.production_deployment_id == old.pk
    assert DeploymentEvent.objects.filter(deployment=old, type="promoted").exists()
    assert AuditEvent.objects.get(action="deployment.rolled_back").data["from"] == current.pk
    assert _messages(res) == [f"{old.pk}: now serves production of shop."]

    res = _act(staff, "rollback", building)
    project.refresh_from_db()
    assert project.production_deployment_id == old.pk
    assert _messages(res) == [f"{building.pk}: Only another ready deployment of this project can be rolled back to."]
