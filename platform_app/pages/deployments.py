"""A deployment's page: status, address, the build log (live over EventSource, resuming with Last-Event-ID),
the events timeline and the doctor's findings; cancel and redeploy."""
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from platform_app.api.kept import kept_page_part
from platform_app.pages.base import client_ip, require, workspace_context
from platform_app.pages.kept import kept_page
from platform_app.services.deployments import deployments as services
from platform_app.services.deployments.doctor import diagnose, doctor_report_create, doctor_report_pr
from platform_app.services.deployments.selectors import deployment_events, deployment_log_lines, latest_doctor_report
from platform_app.templatetags.dashboard import log_spans

LOG_LINES_RENDERED = 2000  # the rest of a longer log comes over the stream


def _deployment_context(request, org_id, deployment_id) -> dict:
    context = workspace_context(request, org_id)
    deployment = services.deployment_get(workspace=context["workspace"], deployment_id=deployment_id)
    context.update(deployment=deployment, project=deployment.project)
    return context


@login_required
def deployment_page(request, org_id, deployment_id):
    context = _deployment_context(request, org_id, deployment_id)
    deployment = context["deployment"]
    failed = deployment.status == deployment.Status.ERROR

    def log() -> tuple[str, int, bool]:
        lines = deployment_log_lines(deployment=deployment, limit=LOG_LINES_RENDERED)
        return log_spans(lines), lines[-1].seq if lines else 0, len(lines) == LOG_LINES_RENDERED

    def rendered():
        # a finished build's log no longer changes: its spans are kept until the workspace's stamp moves
        log_html, last_seq, more = (kept_page_part(context, ("deployment-log", deployment.pk), log,
                                                   size=lambda value: len(value[0]))
                                    if deployment.is_finished else log())
        context.update(
            # a longer log than the page renders is followed by the stream even after the build ended
            follow=not deployment.is_finished or more, tab="deployments", log_html=log_html, last_seq=last_seq,
            events=deployment_events(deployment=deployment),
            queue_position=services.queue_position(deployment),
            is_production=deployment.project.production_deployment_id == deployment.pk,
            stream_url=f"/v1/orgs/{context['workspace'].pk}/deployments/{deployment.pk}/logs/stream",
        )
        if failed:  # what the doctor found, and its pull request if opened
            context.update(findings=diagnose(deployment), report=latest_doctor_report(deployment=deployment))
        return render(request, "platform_app/deployments/deployment.html", context)

    # kept whole once the build ended, but for a failed one: its doctor's report is not in the stamp (pages/kept.py)
    return kept_page(request, context, rendered, keep=deployment.is_finished and not failed)


@login_required
@require_POST
def deployment_cancel(request, org_id, deployment_id):
    context = _deployment_context(request, org_id, deployment_id)
    require(context, "deploy")
    services.deployment_cancel(workspace=context["workspace"], deployment_id=deployment_id, actor=request.user)
    messages.success(request, "Deployment canceled.")
    return redirect("deployment", org_id=context["workspace"].slug, deployment_id=deployment_id)


@login_required
@require_POST
def deployment_redeploy(request, org_id, deployment_id):
    """Build the same environment and branch (or upload) again (new variables and settings apply)."""
    context = _deployment_context(request, org_id, deployment_id)
    require(context, "deploy")
    old = context["deployment"]
    new = services.deployment_trigger(project=old.project, env=old.env, branch=old.branch, trigger="manual",
                                      actor=request.user, ip=client_ip(request), source_id=old.source_upload_id)
    messages.success(request, f"Redeploying {old.branch or 'the same upload'} to {old.env}.")
    return redirect("deployment", org_id=context["workspace"].slug, deployment_id=new.pk)


@login_required
@require_POST
def deployment_fix_pr(request, org_id, deployment_id):
    """Open a pull request with the doctor's fixes through the project's Git provider connection."""
    context = _deployment_context(request, org_id, deployment_id)
    require(context, "deploy")
    report = latest_doctor_report(deployment=context["deployment"]) or doctor_report_create(
        deployment=context["deployment"])
    report = doctor_report_pr(workspace=context["workspace"], report_id=report.pk)
    messages.success(request, f"Pull request opened: {report.pull_request_url}")
    return redirect("deployment", org_id=context["workspace"].slug, deployment_id=deployment_id)
