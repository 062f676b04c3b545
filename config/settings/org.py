"""Settings of the org area: workspace single sign-on, SCIM, the IP allowlist, feedback and growth (docs/org.md)."""
from celery.schedules import crontab

from .core import env

# Single sign-on ---------------------------------------------------------------------------------
# Break-glass: with "require SSO" on, members of these roles may still act after signing in another way (an owner
# can always reach the settings to fix a broken provider). Empty: nobody is exempt.
SSO_REQUIRE_EXEMPT_ROLES = env.list("SSO_REQUIRE_EXEMPT_ROLES", default=["owner"])
SSO_MAX_ALLOWED_DOMAINS = 50

# SCIM -------------------------------------------------------------------------------------------
SCIM_MAX_RESULTS = env.int("SCIM_MAX_RESULTS", default=200)  # `count` above this is clamped

# IP allowlist -----------------------------------------------------------------------------------
IP_ALLOWLIST_MAX_ENTRIES = env.int("IP_ALLOWLIST_MAX_ENTRIES", default=100)

# Feedback ---------------------------------------------------------------------------------------
FEEDBACK_MAX_MESSAGE_CHARS = 5000
# Sends per hour: per client address for visitors who are not signed in, per user for those who are.
FEEDBACK_ANONYMOUS_PER_HOUR = env.int("FEEDBACK_ANONYMOUS_PER_HOUR", default=5)
FEEDBACK_PER_USER_PER_HOUR = env.int("FEEDBACK_PER_USER_PER_HOUR", default=30)

# Growth -----------------------------------------------------------------------------------------
# Events a client may send to `POST /v1/growth/track`; the milestones are recorded by the services themselves.
GROWTH_CLIENT_EVENTS = env.list("GROWTH_CLIENT_EVENTS", default=[
    "dashboard_viewed", "docs_opened", "template_selected", "onboarding_step_completed", "upgrade_clicked",
    "cli_signed_in"])
GROWTH_TRACK_PER_USER_PER_MINUTE = env.int("GROWTH_TRACK_PER_USER_PER_MINUTE", default=60)

ORG_BEAT: dict = {
    # the current week's review (and the last one's, final once its week is over), kept as history
    "growth-reviews-compute": {"task": "platform_app.tasks.org.growth_reviews_compute",
                               "schedule": crontab(minute=7)},
}
