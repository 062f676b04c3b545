"""Workspaces and membership lookups."""
from django.db import IntegrityError, connection, transaction
from django.utils.text import slugify

from config.errors import Conflict
from config.ids import new_id
from config.rows import table
from platform_app.choices import Role
from platform_app.models import Membership, Workspace
from platform_app.services.org.growth_events import WORKSPACE_CREATED, growth_event_record
from platform_app.services.teams.audit import audit_record


def _free_slug(base: str) -> str:
    base = slugify(base)[:40] or "workspace"
    slug, n = base, 1
    while Workspace.objects.filter(slug=slug).exists():
        n += 1
        slug = f"{base}-{n}"
    return slug


@transaction.atomic
def workspace_create(*, user, name: str, slug: str | None = None, ip: str = "") -> Workspace:
    """A new workspace whose creator is its owner."""
    if slug:
        slug = slugify(slug)
        if Workspace.objects.filter(slug=slug).exists():
            raise Conflict("This slug is taken.", code="slug_taken", details={"slug": ["Already in use."]})
    else:
        slug = _free_slug(name)
    try:
        with transaction.atomic():
            ws = Workspace.objects.create(id=new_id("org"), name=name, slug=slug)
    except IntegrityError:
        raise Conflict("This slug is taken.", code="slug_taken", details={"slug": ["Already in use."]})
    Membership.objects.create(workspace=ws, user=user, role=Role.OWNER)
    audit_record(workspace=ws, actor=user, action="workspace.created", target=ws, data={"name": name}, ip=ip)
    growth_event_record(event=WORKSPACE_CREATED, user=user, workspace=ws)
    return ws


def workspaces_of(user):
    return Membership.objects.filter(user=user).select_related("workspace").order_by("workspace__name")


def workspace_choices(user) -> list[tuple[str, str, str]]:
    """(id, slug, name) of each of the user's workspaces, by name: the switcher every workspace page shows (written
    by hand, as config/rows.py's statements are: compiling the queryset above cost more than the database's work)."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT w.id, w.slug, w.name FROM {table(Membership)} m JOIN {table(Workspace)} w "
                       "ON w.id = m.workspace_id WHERE m.user_id = %s ORDER BY w.name, w.id", [user.pk])
        return cursor.fetchall()


@transaction.atomic
def workspace_update(*, workspace: Workspace, actor, name: str | None = None, slug: str | None = None,
                     ip: str = "") -> Workspace:
    """Rename a workspace or change its slug (409 when the slug is taken)."""
    workspace = Workspace.objects.select_for_update().get(pk=workspace.pk)
    changes = {}
    if name is not None and name != workspace.name:
        changes["name"] = [workspace.name, name]
        workspace.name = name
    if slug is not None:
        slug = slugify(slug)
        if slug != workspace.slug:
            if Workspace.objects.filter(slug=slug).exclude(pk=workspace.pk).exists():
                raise Conflict("This slug is taken.", code="slug_taken", details={"slug": ["Already in use."]})
            changes["slug"] = [workspace.slug, slug]
            workspace.slug = slug
    if changes:
        try:
            with transaction.atomic():
                workspace.save()
        except IntegrityError:
            raise Conflict("This slug is taken.", code="slug_taken", details={"slug": ["Already in use."]})
        audit_record(workspace=workspace, actor=actor, action="workspace.updated", target=workspace, data=changes,
                     ip=ip)
    return workspace


def workspace_stats(*, workspace: Workspace) -> dict:
    """Counts for the dashboard: projects, members, deployments this month (total and by status)."""
    from django.db.models import Count
    from django.utils import timezone

    from platform_app.models import Deployment

    now = timezone.now()
    month_start = now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    month = Deployment.objects.filter(project__workspace=workspace, created_at__gte=month_start)
    by_status = dict(month.values_list("status").annotate(n=Count("id")).order_by())
    return {
        "projects": workspace.projects.count(),
        "members": workspace.memberships.count(),
        "pending_invitations": workspace.invitations.filter(status="pending", expires_at__gt=now).count(),
        "deployments_this_month": sum(by_status.values()),
        "deployments_by_status": by_status,
        "period_start": month_start,
    }
