"""Every `/v1` route of the platform (and `/health`). `O` = `orgs/<org_id>`."""
from django.urls import include, path

from platform_app.api.identity import auth
from platform_app.api.identity import device
from platform_app.api.identity import email
from platform_app.api.identity import mfa
from platform_app.api.identity import tokens
from platform_app.api.teams import workspaces

O = "orgs/<str:org_id>"

urlpatterns = [
    # Session and identity
    path("auth/sign-up", auth.SignUpView.as_view()),
    path("auth/sign-in", auth.SignInView.as_view()),
    path("auth/refresh", auth.RefreshView.as_view()),
    path("auth/sign-out", auth.SignOutView.as_view()),
    path("auth/me", auth.MeView.as_view()),
    path("auth/sessions", auth.SessionListView.as_view()),
    path("auth/sessions/revoke-all", auth.SessionRevokeAllView.as_view()),
    path("auth/sessions/<str:session_id>/revoke", auth.SessionRevokeView.as_view()),
    path("auth/ws-token", auth.StreamTokenView.as_view()),
    path("auth/email/verification", email.EmailVerificationView.as_view()),
    path("auth/email/verify", email.EmailVerifyView.as_view()),
    path("auth/token/introspect", auth.IntrospectView.as_view()),
    path("auth/device/code", device.DeviceCodeView.as_view()),
    path("auth/device/token", device.DeviceTokenView.as_view()),
    # MFA
    path("auth/mfa", mfa.FactorListView.as_view()),
    path("auth/mfa/totp", mfa.TotpEnrolView.as_view()),
    path("auth/mfa/totp/confirm", mfa.TotpConfirmView.as_view()),
    path("auth/mfa/<str:factor_id>", mfa.FactorDeleteView.as_view()),
    # API tokens
    path("user/tokens", tokens.UserTokenListView.as_view()),
    path("user/tokens/<str:token_id>", tokens.UserTokenDetailView.as_view()),
    path(f"{O}/api-tokens", tokens.WorkspaceTokenListView.as_view()),
    path(f"{O}/api-tokens/<str:token_id>", tokens.WorkspaceTokenDetailView.as_view()),
    # Workspaces
    path("orgs", workspaces.WorkspaceListView.as_view()),
    path(O, workspaces.WorkspaceDetailView.as_view()),
]
# Areas: each module lists its own routes.
urlpatterns += [
    path("", include("platform_app.api.urls_teams")),
    path("", include("platform_app.api.urls_git")),
    path("", include("platform_app.api.urls_deployments")),
    path("", include("platform_app.api.urls_env")),
    path("", include("platform_app.api.domains.urls")),
    path("", include("platform_app.api.edge.urls")),
    path("", include("platform_app.api.automation.urls")),
    # Resources (platform_app/api/resources/): one module per feature
    path("", include("platform_app.api.resources.addons")),
    path("", include("platform_app.api.resources.components")),
    path("", include("platform_app.api.resources.buckets")),
    path("", include("platform_app.api.resources.databases")),
    path("", include("platform_app.api.resources.tunnel")),
    path("", include("platform_app.api.resources.graduate")),
    # Money and organisation: metering, cost, billing (billing/); SSO, SCIM, IP allowlist, feedback, growth (org/)
    path("", include("platform_app.api.billing.urls")),
    path("", include("platform_app.api.org.urls")),
    # Staff (/v1/admin, incidents), the status page's JSON (staff/), the MCP endpoint (mcp/)
    path("", include("platform_app.api.staff.urls")),
    path("", include("platform_app.api.mcp.urls")),
]
