"""Routes of the org area (mounted under /v1/), one module per feature listed here. SCIM is outside /v1:
platform_app/api/org/scim_urls.py, at /scim/v2/."""
from django.urls import path

from platform_app.api.org import feedback, growth, sso

O = "orgs/<str:org_id>"

urlpatterns = [
    # Single sign-on, SCIM token, IP allowlist (sso.py)
    path(f"{O}/sso", sso.SsoSettingsView.as_view()),
    path(f"{O}/sso/scim-token", sso.ScimTokenView.as_view()),
    path(f"{O}/sso/ip-allowlist", sso.IpAllowlistView.as_view()),
    path(f"{O}/sso/ip-allowlist/<str:entry_id>", sso.IpAllowlistEntryView.as_view()),
    path("auth/sso/<str:org>/start", sso.SsoStartView.as_view()),
    path("auth/sso/<str:org>/callback", sso.SsoCallbackView.as_view()),
    # Feedback (feedback.py)
    path("feedback", feedback.FeedbackView.as_view()),
    path("feedback/inbox", feedback.FeedbackInboxView.as_view()),
    path("feedback/inbox/<str:feedback_id>", feedback.FeedbackItemView.as_view()),
    # Growth (growth.py)
    path("growth/track", growth.TrackView.as_view()),
    path("growth/funnel", growth.FunnelView.as_view()),
    path("growth/review/current", growth.ReviewCurrentView.as_view()),
    path("growth/review/history", growth.ReviewHistoryView.as_view()),
]
