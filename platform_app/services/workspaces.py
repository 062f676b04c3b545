"""Workspaces and membership lookups."""
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils.text import slugify

from config.errors import Conflict, NotFound
from config.ids import new_id
from platform_app.choices import Role
from platform_app.models import Membership, Workspace
from platform_app.services.audit import audit_record


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
    return ws


def workspace_for_member(*, user, ref: str) -> tuple[Workspace, Membership]:
    """The workspace named by id or slug, with the caller's membership; 404 otherwise."""
    membership = (Membership.objects.select_related("workspace")
                  .filter(user=user).filter(Q(workspace_id=ref) | Q(workspace__slug=ref)).first())
    if membership is None:
        raise NotFound("No such workspace.")
    return membership.workspace, membership


def workspaces_of(user):
    return Membership.objects.filter(user=user).select_related("workspace").order_by("workspace__name")
