"""Reads of the projects area that the API and the pages share."""
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
