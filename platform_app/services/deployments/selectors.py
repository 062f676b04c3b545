"""Reads the dashboard shows about projects and deployments (one query per list, no N+1)."""
from django.db.models import OuterRef, Subquery

from platform_app.models import DeployHook, Deployment, DeploymentEvent, DoctorReport, Project
from platform_app.services.deployments.log_archive import log_lines


LISTED = ("id", "project_id", "status", "env", "branch", "commit_sha", "created_at")


def projects_with_last_deployment(*, workspace, search: str = "", page: int = 1,
                                  per_page: int = 50) -> tuple[list[Project], bool]:
    """A page of the workspace's projects by name (those whose name holds `search`), each with `last_deployment`
    (or None), and whether a next page exists; two queries whatever the workspace's size."""
    latest = Deployment.objects.filter(project=OuterRef("pk")).order_by("-created_at", "-pk").values("pk")[:1]
    found = Project.objects.filter(workspace=workspace)
    if search:
        found = found.filter(name__icontains=search)
    first = (max(page, 1) - 1) * per_page
    projects = list(found.annotate(last_id=Subquery(latest)).order_by("name", "pk")[first:first + per_page + 1])
    more, projects = len(projects) > per_page, projects[:per_page]
    # what the row shows of it: a deployment's snapshot, archive and log columns cost the page more than its SQL
    last = Deployment.objects.only(*LISTED).in_bulk([p.last_id for p in projects if p.last_id])
    for project in projects:
        project.last_deployment = last.get(project.last_id)
    return projects, more


def project_deployments(*, project, limit: int = 50) -> list[Deployment]:
    """The project's newest deployments, with who started each."""
    return list(Deployment.objects.filter(project=project).select_related("project", "created_by")
                .order_by("-created_at", "-pk")[:limit])


def deployment_events(*, deployment) -> list[DeploymentEvent]:
    return list(DeploymentEvent.objects.filter(deployment=deployment).order_by("created_at", "pk"))


def deployment_log_lines(*, deployment, limit: int = 2000) -> list:
    """The log's first `limit` lines, from its rows or its archive (log_archive.py)."""
    return log_lines(deployment.pk, limit=limit, times=False)  # the page shows no times


def latest_doctor_report(*, deployment) -> DoctorReport | None:
    return DoctorReport.objects.filter(deployment=deployment).order_by("-created_at").first()


PRODUCTION_ENV = "production"


def rollback_targets(*, project):
    """The deployments production may be pointed at: ready builds of the production environment (not a preview's
    or another environment's, whose variables and protection differ; not a component's), except the current one."""
    return (Deployment.objects.filter(project=project, status=Deployment.Status.READY, env=PRODUCTION_ENV,
                                      component__isnull=True)
            .exclude(pk=project.production_deployment_id))


def rollback_candidates(*, project) -> set[str]:
    """Ids of the project's deployments production could be rolled back to (the dashboard's buttons)."""
    return set(rollback_targets(project=project).values_list("pk", flat=True))


def deploy_hooks(*, project) -> list:
    return list(DeployHook.objects.filter(project=project).order_by("name"))


def deployments_of(*, project=None, workspace=None, status: str = "", env: str = "", project_id: str = ""):
    """A project's or a workspace's deployments, narrowed by status, environment and project. A project's rows
    carry that project itself (its related manager sets it), not a copy joined in and read for each row."""
    if project is not None:
        qs = project.deployments.all()
    else:
        qs = Deployment.objects.select_related("project").filter(project__workspace=workspace)
    if status:
        qs = qs.filter(status=status)
    if env:
        qs = qs.filter(env=env)
    if project_id:
        qs = qs.filter(project_id=project_id)
    return qs
