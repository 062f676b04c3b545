"""Project groups: named sets of projects in a workspace (slug unique per workspace)."""
import re

from django.db import IntegrityError, transaction
from django.utils.text import slugify

from config.errors import Conflict, NotFound, ValidationFailed
from config.ids import new_id
from platform_app.models import ProjectGroup
from platform_app.services.teams.audit import audit_record


def project_group_get(*, workspace, ref: str) -> ProjectGroup:
    """A group of this workspace by id or slug; 404 otherwise."""
    found = (ProjectGroup.objects.filter(workspace=workspace, pk=ref).first()
             or ProjectGroup.objects.filter(workspace=workspace, slug=ref).first())
    if found is None:
        raise NotFound("No such project group.")
    return found


@transaction.atomic
def project_group_create(*, workspace, actor, name: str, slug: str | None = None, ip: str = "") -> ProjectGroup:
    """A new group; 409 when the slug is taken in this workspace. Without `slug`, the name needs an ASCII letter or
    digit (as the schema says): `Ĉ` alone would slugify to `c`, which the schema cannot promise."""
    if not slug and not re.search(r"[A-Za-z0-9]", name):
        raise ValidationFailed("Without a slug, the name must contain a letter or digit (a-z, 0-9).",
                               details={"name": ["No letter or digit a-z, 0-9: give a slug."]})
    slug = slugify(slug or name)[:64]
    if not slug:
        raise ValidationFailed("The name must contain letters or digits.", details={"name": ["No usable slug."]})
    try:
        with transaction.atomic():
            group = ProjectGroup.objects.create(id=new_id("grp"), workspace=workspace, name=name, slug=slug)
    except IntegrityError:
        raise Conflict("A group with this slug exists.", code="slug_taken", details={"slug": ["Already in use."]})
    audit_record(workspace=workspace, actor=actor, action="project_group.created", target=group,
                 data={"name": name, "slug": slug}, ip=ip)
    return group


@transaction.atomic
def project_group_delete(*, group: ProjectGroup, actor, ip: str = "") -> ProjectGroup:
    """Delete a group; its projects stay, ungrouped."""
    pk = group.pk
    audit_record(workspace=group.workspace, actor=actor, action="project_group.deleted", target=group,
                 data={"name": group.name, "slug": group.slug}, ip=ip)
    group.delete()
    group.pk = pk
    return group
