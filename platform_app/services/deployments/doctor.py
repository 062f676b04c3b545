"""The build doctor: reads a failed build's log and settings and says what went wrong and how to fix it."""
import re
from dataclasses import asdict, dataclass

from django.db import transaction

from config.errors import Conflict, NotFound, ServiceUnavailable
from platform_app.models import Deployment, DoctorReport
from platform_app.services.deployments.log_archive import log_lines


@dataclass
class Finding:
    rule: str
    title: str
    evidence: list
    fix: str


# (rule, pattern over one log line, title, fix); `{0}` is the pattern's first group.
RULES = [
    ("missing-dependency", re.compile(r"ModuleNotFoundError: No module named '([\w.]+)'"),
     "Python module {0} is not installed", "Add `{0}` to requirements.txt (or pyproject.toml) and redeploy."),
    ("missing-dependency", re.compile(r"Cannot find module '([^']+)'"),
     "Node module {0} is not installed", "Add `{0}` to package.json dependencies (`npm install {0}`) and commit the lockfile."),
    ("missing-dependency", re.compile(r"npm ERR! 404 .*'([^']+)@"),
     "npm package {0} does not exist", "Fix the name or version of `{0}` in package.json."),
    ("command-not-found", re.compile(r"(?:sh: \d+: |/bin/sh: \d*:? ?)?(\S+): (?:command )?not found"),
     "Command {0} is not available in the build image",
     "Install `{0}` in the install command or use a command the build image has; check the build command for typos."),
    ("out-of-memory", re.compile(r"(JavaScript heap out of memory|Killed$|exited with 137)"),
     "The build ran out of memory", "Lower the build's memory use (e.g. NODE_OPTIONS=--max-old-space-size=2048) or split the build."),
    ("wrong-output-directory", re.compile(r"The output directory '([^']*)' was not produced"),
     "The output directory {0} does not exist after the build",
     "Set the project's output directory to the folder your build writes (dist, build, out, public...)."),
    ("wrong-runtime-version", re.compile(r"(?:engine \"node\" is incompatible|Unsupported engine|requires-python|"
                                         r"SyntaxError: .*(?:match|walrus)|Python ([\d.]+) is not supported)"),
     "The project needs another Node or Python version", "Pin the runtime the project expects (engines.node, .nvmrc, .python-version)."),
    ("missing-env-var", re.compile(r"(?:KeyError: '([A-Z][A-Z0-9_]+)'|environment variable ([A-Z][A-Z0-9_]+) is not set|"
                                   r"process\.env\.([A-Z][A-Z0-9_]+) is undefined)"),
     "Environment variable {0} is missing", "Add {0} to the project's environment variables for this environment."),
]


def diagnose(deployment: Deployment) -> list[Finding]:
    """Run every rule over the log; one finding per (rule, subject) with up to three evidence lines."""
    found: dict = {}
    lines = [(line.seq, line.text) for line in log_lines(deployment.pk, times=False)]
    for seq, text in lines:
        for rule, pattern, title, fix in RULES:
            match = pattern.search(text)
            if not match:
                continue
            subject = next((g for g in match.groups() if g), "") if match.groups() else ""
            if rule == "command-not-found" and subject in ("", "Error"):
                continue
            key = (rule, subject)
            if key not in found:
                found[key] = Finding(rule, title.format(subject), [], fix.format(subject))
            if len(found[key].evidence) < 3:
                found[key].evidence.append({"line": seq, "text": text[:500]})
    if not lines and deployment.error_message:
        for rule, pattern, title, fix in RULES:
            match = pattern.search(deployment.error_message)
            if match:
                subject = next((g for g in match.groups() if g), "")
                found[(rule, subject)] = Finding(rule, title.format(subject), [{"line": None,
                                                 "text": deployment.error_message[:500]}], fix.format(subject))
    return list(found.values())


@transaction.atomic
def doctor_report_create(*, deployment: Deployment) -> DoctorReport:
    if deployment.status != Deployment.Status.ERROR:
        raise Conflict("The doctor looks at failed deployments; this one is " + deployment.status + ".")
    return DoctorReport.objects.create(deployment=deployment, findings=[asdict(f) for f in diagnose(deployment)])


def doctor_report_pr(*, workspace, report_id: str) -> DoctorReport:
    """Open a pull request with the fix through the project's Git provider connection."""
    report = DoctorReport.objects.select_related("deployment__project").filter(
        pk=report_id, deployment__project__workspace=workspace).first()
    if report is None:
        raise NotFound("No such doctor report.")
    project = report.deployment.project
    try:
        from platform_app.services.providers.git_connections import pull_request_create
    except ImportError:
        raise ServiceUnavailable("Pull requests need a Git provider connection, which is not configured.",
                                 code="provider_not_configured")
    if not project.git_provider:
        raise Conflict("This project's repository is not connected through a Git provider.", code="no_provider")
    if report.pull_request_url:
        return report
    body = "The build doctor found:\n\n" + "\n".join(f"- **{f['title']}**: {f['fix']}" for f in report.findings)
    result = pull_request_create(workspace=workspace, provider=project.git_provider, repo=project.git_repo,
                                 base=project.production_branch, head=f"doctor/{report.pk}",
                                 title=f"Fix the build of {report.deployment_id}", body=body,
                                 file_fixes=file_fixes(report.findings))
    report.pull_request_url = result.get("url", "")
    report.save(update_fields=["pull_request_url"])
    return report


def file_fixes(findings: list[dict]) -> dict:
    """Concrete file changes for the findings that have one: a missing Python module joins requirements.txt."""
    modules = [f["title"].split()[2] for f in findings
               if f["rule"] == "missing-dependency" and f["title"].startswith("Python module ")]
    if not modules:
        return {}

    def add(text):
        lines = (text or "").splitlines()
        names = {line.split("=")[0].split("<")[0].split(">")[0].strip().lower() for line in lines}
        lines += [m.split(".")[0] for m in modules if m.split(".")[0].lower() not in names]
        return "\n".join(lines) + "\n"

    return {"requirements.txt": add}
