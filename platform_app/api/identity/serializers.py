"""Read serializers of the identity resources, shared by several endpoint modules."""
from rest_framework import serializers

from config.serializers import ModelSerializer
from platform_app.models import ApiToken, AuthSession, User, Workspace


class UserSerializer(ModelSerializer):
    email_verified = serializers.SerializerMethodField(
        help_text="Whether the address was proved (a link sent to it, or a provider vouching for it); until then "
                  "invitations to it are withheld.")

    class Meta:
        model = User
        fields = ("id", "email", "name", "date_joined", "email_verified")

    def get_email_verified(self, obj) -> bool:
        return obj.email_verified_at is not None


class WorkspaceSerializer(ModelSerializer):
    class Meta:
        model = Workspace
        fields = ("id", "slug", "name", "created_at", "updated_at")


class WorkspaceWithRoleSerializer(serializers.Serializer):
    id = serializers.CharField(source="workspace.id")
    slug = serializers.CharField(source="workspace.slug")
    name = serializers.CharField(source="workspace.name")
    role = serializers.CharField()


class SessionSerializer(ModelSerializer):
    current = serializers.SerializerMethodField()
    active = serializers.BooleanField(source="is_active")

    class Meta:
        model = AuthSession
        fields = ("id", "kind", "ip", "user_agent", "created_at", "last_used_at", "revoked_at", "active", "current")

    def get_current(self, obj) -> bool:
        return obj.pk == self.context.get("current_session_id")


class ApiTokenSerializer(ModelSerializer):
    """List view: metadata only, never the value or its hash."""

    org_id = serializers.CharField(source="workspace_id", allow_null=True)

    class Meta:
        model = ApiToken
        fields = ("id", "name", "prefix", "scopes", "org_id", "expires_at", "last_used_at", "revoked_at", "created_at")


class ApiTokenCreatedSerializer(ModelSerializer):
    """Creation response: the only place the plain token ever appears."""

    org_id = serializers.CharField(source="workspace_id", allow_null=True)
    token = serializers.SerializerMethodField()

    class Meta:
        model = ApiToken
        fields = ("id", "name", "token", "scopes", "org_id", "expires_at", "created_at")

    def get_token(self, obj) -> str:
        return self.context["plain_token"]


class AuthResultSerializer(serializers.Serializer):
    user = UserSerializer()
    access_token = serializers.CharField()
    refresh_token = serializers.CharField()
    expires_in = serializers.IntegerField()
    session_id = serializers.CharField(source="session.id")
