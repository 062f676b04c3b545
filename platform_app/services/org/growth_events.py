"""Recording growth events: the one write every service that reaches a milestone calls (sign-up, workspace created,
first project, first ready deployment, first domain, subscribed). It imports no other service, so anything may use
it; a milestone is recorded once per user or workspace (`once_key`), and recording never fails its caller's work."""
import logging

from django.db import DatabaseError, transaction

from platform_app.models import GrowthEvent

logger = logging.getLogger(__name__)

# The milestones, in the funnel's order (docs/org.md): the first is per user, the others per workspace.
SIGNED_UP = "signed_up"
WORKSPACE_CREATED = "workspace_created"
FIRST_PROJECT = "first_project"
FIRST_DEPLOYMENT_READY = "first_deployment_ready"
FIRST_DOMAIN = "first_domain"
SUBSCRIBED = "subscribed"  # recorded by billing when a workspace subscribes to a paid plan
MILESTONES = (SIGNED_UP, WORKSPACE_CREATED, FIRST_PROJECT, FIRST_DEPLOYMENT_READY, FIRST_DOMAIN, SUBSCRIBED)
_PER_USER = {SIGNED_UP}


def growth_event_record(*, event: str, user=None, workspace=None, properties: dict | None = None,
                        once: bool = True) -> None:
    """Record `event` (a milestone: once per user for sign-up, once per workspace for the others unless
    `once=False`; a repeat is ignored by the database). Runs inside the caller's transaction, in a savepoint: a failure
    here is logged and leaves the caller's work alone."""
    user_id = getattr(user, "pk", user)
    workspace_id = getattr(workspace, "pk", workspace)
    once_key = None
    if once:
        subject = user_id if event in _PER_USER else workspace_id
        if subject is None:
            return
        once_key = f"{event}:{subject}"
    try:
        with transaction.atomic():
            GrowthEvent.objects.bulk_create(
                [GrowthEvent(event=event, user_id=user_id, workspace_id=workspace_id, properties=properties or {},
                             once_key=once_key)], ignore_conflicts=once_key is not None)
    except DatabaseError:
        logger.exception("growth event %s not recorded", event)
