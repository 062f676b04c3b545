"""The organisation side of a workspace: single sign-on (OIDC) and its sessions, SCIM provisioning, the IP
allowlist; and the platform's own feedback inbox and growth tracking (docs/org.md)."""
from django.conf import settings
from django.db import models
from django.db.models import Q
from django.db.models.functions import Lower
from django.utils import timezone

from config.ids import PrefixedIdField
from platform_app.choices import Role

__all__ = ("WorkspaceSso", "SsoIdentity", "SsoSession", "IpAllowlistEntry", "ScimUser", "ScimGroup", "Feedback",
           "GrowthEvent", "WeeklyReview")


class WorkspaceSso(models.Model):
    """A workspace's OpenID Connect provider, its "require SSO" rule and its SCIM token.

    The client secret is Fernet-encrypted (never returned); the SCIM token is stored as its SHA-256 only (shown
    once, a new one replaces the old). `require_sso` needs `enabled`."""

    id = PrefixedIdField(prefix="sso")
    workspace = models.OneToOneField("platform_app.Workspace", on_delete=models.CASCADE, related_name="sso_settings")
    enabled = models.BooleanField(default=False)
    issuer = models.CharField(max_length=500, blank=True, help_text="https URL; discovery at "
                                                                    "<issuer>/.well-known/openid-configuration")
    client_id = models.CharField(max_length=255, blank=True)
    client_secret_encrypted = models.TextField(blank=True)
    allowed_domains = models.JSONField(default=list, blank=True,
                                       help_text="Email domains that may sign in just in time (empty: none).")
    require_sso = models.BooleanField(default=False, help_text="Members must have signed in through this provider "
                                                               "to act in the workspace (owners are exempt).")
    default_role = models.CharField(max_length=16, choices=Role.choices, default=Role.VIEWER,
                                    help_text="Role of members created by sign-in or SCIM outside role groups.")
    scim_enabled = models.BooleanField(default=False)
    scim_token_hash = models.CharField(max_length=64, blank=True)
    scim_token_prefix = models.CharField(max_length=16, blank=True)
    scim_token_created_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "workspace single sign-on"
        verbose_name_plural = "workspace single sign-on settings"
        constraints = [
            models.UniqueConstraint(fields=["scim_token_hash"], condition=~Q(scim_token_hash=""),
                                    name="sso_scim_token_unique"),
            models.CheckConstraint(condition=Q(require_sso=False) | Q(enabled=True), name="sso_require_needs_enabled"),
            models.CheckConstraint(condition=~Q(default_role="owner"), name="sso_default_role_not_owner"),
        ]

    def __str__(self):
        return f"SSO of {self.workspace_id}"


class SsoIdentity(models.Model):
    """A user's account at a workspace's identity provider (issuer + subject), linked at the first SSO sign-in."""

    id = PrefixedIdField(prefix="ssoi")
    workspace = models.ForeignKey("platform_app.Workspace", on_delete=models.CASCADE, related_name="sso_identities")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="sso_identities")
    issuer = models.CharField(max_length=500)
    subject = models.CharField(max_length=255)
    email = models.EmailField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    last_sign_in_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name_plural = "SSO identities"
        constraints = [models.UniqueConstraint(fields=["workspace", "issuer", "subject"], name="sso_identity_unique")]
        indexes = [models.Index(fields=["workspace", "user"])]

    def __str__(self):
        return f"{self.subject} → {self.user_id}"


class SsoSession(models.Model):
    """An API session (`AuthSession`) started through a workspace's single sign-on: what "require SSO" asks for.
    (Dashboard cookie sessions keep the same fact in the Django session.)"""

    id = PrefixedIdField(prefix="ssos")
    session = models.OneToOneField("platform_app.AuthSession", on_delete=models.CASCADE, related_name="sso")
    workspace = models.ForeignKey("platform_app.Workspace", on_delete=models.CASCADE, related_name="sso_sessions")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["workspace", "session"])]

    def __str__(self):
        return f"{self.session_id} via SSO of {self.workspace_id}"


class IpAllowlistEntry(models.Model):
    """One network (a normalised CIDR, IPv4 or IPv6) allowed to reach the workspace's API and pages. An empty
    list allows every address."""

    id = PrefixedIdField(prefix="ipa")
    workspace = models.ForeignKey("platform_app.Workspace", on_delete=models.CASCADE, related_name="ip_allowlist")
    cidr = models.CharField(max_length=49)
    note = models.CharField(max_length=200, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name = "IP allowlist entry"
        verbose_name_plural = "IP allowlist entries"
        ordering = ("-created_at",)
        constraints = [models.UniqueConstraint(fields=["workspace", "cidr"], name="ip_allowlist_unique_cidr")]

    def __str__(self):
        return f"{self.cidr} ({self.workspace_id})"


class ScimUser(models.Model):
    """A SCIM 2.0 User of a workspace (RFC 7643): the provisioned person, the platform account it stands for and
    whether it is active (an active record has a membership; deactivating removes it)."""

    id = PrefixedIdField(prefix="scu")
    workspace = models.ForeignKey("platform_app.Workspace", on_delete=models.CASCADE, related_name="scim_users")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="scim_records")
    user_name = models.CharField(max_length=255)
    external_id = models.CharField(max_length=255, blank=True)
    given_name = models.CharField(max_length=150, blank=True)
    family_name = models.CharField(max_length=150, blank=True)
    display_name = models.CharField(max_length=255, blank=True)
    emails = models.JSONField(default=list, blank=True)
    active = models.BooleanField(default=True)
    account_created = models.BooleanField(default=False, help_text="The platform account was created for this "
                                                                   "record (the workspace's SSO may sign into it).")
    role_managed = models.BooleanField(default=False, help_text="SCIM has set this member's role (from role groups, "
                                                                "else the default role).")
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "SCIM user"
        ordering = ("created_at",)
        constraints = [
            models.UniqueConstraint(Lower("user_name"), "workspace", name="scim_user_unique_user_name"),
            models.UniqueConstraint(fields=["workspace", "user"], name="scim_user_unique_account"),
        ]

    def __str__(self):
        return f"{self.user_name} ({self.workspace_id})"


class ScimGroup(models.Model):
    """A SCIM 2.0 Group of a workspace. A group named like a role (admin, developer, viewer, billing) gives its
    members that role; other groups are kept and mean nothing to the platform."""

    id = PrefixedIdField(prefix="scg")
    workspace = models.ForeignKey("platform_app.Workspace", on_delete=models.CASCADE, related_name="scim_groups")
    display_name = models.CharField(max_length=255)
    external_id = models.CharField(max_length=255, blank=True)
    members = models.ManyToManyField(ScimUser, blank=True, related_name="groups")
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "SCIM group"
        ordering = ("created_at",)
        constraints = [models.UniqueConstraint(Lower("display_name"), "workspace", name="scim_group_unique_name")]

    def __str__(self):
        return f"{self.display_name} ({self.workspace_id})"


class Feedback(models.Model):
    """A message sent from the dashboard or the API (signed in or not), triaged by staff in the inbox."""

    class Category(models.TextChoices):
        BUG = "bug"
        IDEA = "idea"
        QUESTION = "question"
        OTHER = "other"

    class Status(models.TextChoices):
        NEW = "new"
        TRIAGED = "triaged"
        DONE = "done"

    id = PrefixedIdField(prefix="fbk")
    message = models.TextField()
    category = models.CharField(max_length=16, choices=Category.choices)
    page = models.CharField(max_length=500, blank=True, help_text="Where it was sent from.")
    email = models.EmailField(blank=True, help_text="A reply address, when given.")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                             related_name="+")
    ip = models.CharField(max_length=64, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.NEW)
    assignee = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                 related_name="+", limit_choices_to={"is_staff": True})
    note = models.TextField(blank=True, help_text="Staff's note.")
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "feedback"
        ordering = ("-created_at",)
        indexes = [models.Index(fields=["status", "-created_at"])]

    def __str__(self):
        return f"{self.category}: {self.message[:60]}"


class GrowthEvent(models.Model):
    """One growth event: a milestone recorded by the services where it happens (once per user or workspace,
    `once_key`), or an allow-listed event a client sent to `track`."""

    class Source(models.TextChoices):
        SERVER = "server"
        CLIENT = "client"

    id = PrefixedIdField(prefix="gev")
    event = models.CharField(max_length=64)
    source = models.CharField(max_length=8, choices=Source.choices, default=Source.SERVER)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                             related_name="+")
    workspace = models.ForeignKey("platform_app.Workspace", null=True, blank=True, on_delete=models.SET_NULL,
                                  related_name="+")
    properties = models.JSONField(default=dict, blank=True)
    once_key = models.CharField(max_length=120, null=True, blank=True, unique=True,
                                help_text="Set for milestones: the same key is recorded once.")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ("-created_at",)
        indexes = [models.Index(fields=["event", "created_at"])]

    def __str__(self):
        return f"{self.event} at {self.created_at:%Y-%m-%d %H:%M}"


class WeeklyReview(models.Model):
    """The platform's numbers for one ISO week (Monday to Sunday, UTC), computed by beat and kept as history."""

    id = PrefixedIdField(prefix="wkr")
    week = models.DateField(unique=True, help_text="The Monday the week starts on.")
    active_workspaces = models.PositiveIntegerField(default=0)
    sign_ups = models.PositiveIntegerField(default=0)
    deployments = models.PositiveIntegerField(default=0)
    failure_rate = models.FloatField(default=0.0, help_text="Failed / (failed + ready) deployments that ended in "
                                                            "the week; 0 when none ended.")
    revenue = models.BigIntegerField(default=0, help_text="Minor units.")
    revenue_note = models.CharField(max_length=200, blank=True)
    computed_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ("-week",)

    def __str__(self):
        return f"week of {self.week}"
