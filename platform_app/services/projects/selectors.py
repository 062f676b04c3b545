"""Reads of the projects area that the API and the pages share."""
from config.errors import NotFound
from platform_app.models import Project, ProjectGroup


def projects_in(*, workspace, group_id: str | None = None):
    qs = Project.objects.filter(workspace=workspace)
    return qs.filter(group_id=group_id) if group_id else qs


def project_groups_in(*, workspace):
    return ProjectGroup.objects.filter(workspace=workspace)


def projects_serving_static(*, workspace) -> list[Project]:
    """Projects whose production deployment is ready and a static site (no start command)."""
    rows = (Project.objects.filter(workspace=workspace, production_deployment__status="ready")
            .select_related("production_deployment"))
    return [p for p in rows if not (p.production_deployment.snapshot or {}).get("start")]


def project_by_id(project_id: str) -> Project:
    """Any workspace's project by id (for routes that are not a member's: the preview password form); 404."""
    project = Project.objects.filter(pk=project_id).select_related("workspace").first()
    if project is None:
        raise NotFound("No such project.")
    return project
