"""Reads of the agents area that the API and the pages share."""
from platform_app.models import RuntimeLogLine


def runtime_log_tail(*, project, deployment_id: str | None = None, count: int = 100) -> list[RuntimeLogLine]:
    """The last `count` lines the project's instances printed, oldest first."""
    qs = RuntimeLogLine.objects.filter(deployment__project=project)
    if deployment_id:
        qs = qs.filter(deployment_id=deployment_id)
    return list(qs.order_by("-pk")[:count])[::-1]
