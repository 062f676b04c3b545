"""Dashboard pages of the org area; their routes."""
from django.urls import path

from platform_app.pages.org import feedback, sso

urlpatterns = [
    # A workspace's Single sign-on and Security tabs (sso.py)
    path("dashboard/<str:org_id>/sso/", sso.sso_page, name="workspace-sso"),
    path("dashboard/<str:org_id>/sso/scim-token", sso.scim_token_create, name="workspace-scim-token"),
    path("dashboard/<str:org_id>/sso/remove", sso.sso_remove, name="workspace-sso-remove"),
    path("dashboard/<str:org_id>/security/", sso.security_page, name="workspace-security"),
    path("dashboard/<str:org_id>/security/<str:entry_id>/delete", sso.allowlist_entry_delete,
         name="workspace-allowlist-delete"),
    # Signing in through a workspace's single sign-on
    path("sso/", sso.sso_sign_in, name="sso-sign-in"),
    path("sso/<str:org>/start", sso.sso_start, name="sso-start"),
    path("sso/<str:org>/callback", sso.sso_callback, name="sso-callback"),
    # Feedback (feedback.py): the page every dashboard page links to, and the staff inbox
    path("feedback/", feedback.feedback_page, name="feedback"),
    path("feedback/inbox/", feedback.inbox_page, name="feedback-inbox"),
    path("feedback/inbox/<str:feedback_id>", feedback.inbox_item, name="feedback-inbox-item"),
]
