"""The tools the platform's MCP endpoint offers: the platform's own services, behind the same rules as the REST
routes they mirror. A tool declares the scope its route needs; a call checks the token's scopes, the workspace
binding and the member's role exactly as `/v1/orgs/{orgId}/...` does (404 for a workspace that is not the
caller's), and is written to the workspace's audit log."""
from dataclasses import dataclass

from config.errors import ApplicationError, NotFound
from platform_app.services.identity.scopes import scope_allows
from platform_app.services.org.access import Access, Credential, InsufficientScope, RoleTooLow, workspace_enter
from platform_app.services.teams.audit import audit_record

WORKSPACE = {"workspace": {"type": "string", "description": "workspace id or slug"}}
PROJECT = {**WORKSPACE, "project": {"type": "string", "description": "project id or slug"}}
DEPLOYMENT = {**WORKSPACE, "deployment": {"type": "string", "description": "deployment id"}}


class ToolRefused(Exception):
    """A call the caller may not make: the JSON-RPC error names why (`data`)."""

    def __init__(self, message: str, data: dict):
        self.message, self.data = message, data
        super().__init__(message)


@dataclass(frozen=True)
class Tool:
    name: str
    scope: str
    description: str
    properties: dict
    required: tuple
    run: object  # (call: Call, **arguments) -> dict

    def schema(self) -> dict:
        return {"name": self.name, "description": f"{self.description} Needs the `{self.scope}` scope.",
                "inputSchema": {"type": "object", "properties": self.properties, "required": list(self.required),
                                "additionalProperties": False}}


@dataclass
class Call:
    """Who calls (user and credential) and what the tool touches; `access` once a workspace is entered."""

    user: object
    credential: Credential
    tool: Tool
    access: Access | None = None

    @property
    def bound_workspace_id(self) -> str | None:
        return self.credential.bound_workspace_id

    def workspace(self, ref: str):
        """The workspace through the access service every way in calls (its allowlist and require-SSO included)."""
        try:
            self.access = workspace_enter(user=self.user, ref=ref, credential=self.credential, scope=self.tool.scope)
        except RoleTooLow as exc:
            raise ToolRefused(f"Your role ({exc.details['role']}) does not allow {self.tool.name}.", exc.details)
        except InsufficientScope as exc:
            raise ToolRefused(exc.message, exc.details)
        workspace = self.access.workspace
        audit_record(workspace=workspace, actor=self.user, action="mcp.tool_called", target=workspace,
                     data={"tool": self.tool.name})
        return workspace

    def allows(self, scope: str) -> bool:
        """What the credential and the member's current role both allow, in the workspace entered."""
        return self.access is not None and self.access.allows(scope)

    def project(self, workspace_ref: str, project_ref: str):
        from platform_app.services.projects.projects import project_get

        return project_get(workspace=self.workspace(workspace_ref), project_id=project_ref)

    def deployment(self, workspace_ref: str, deployment_ref: str):
        from platform_app.services.deployments.deployments import deployment_get

        return deployment_get(workspace=self.workspace(workspace_ref), deployment_id=deployment_ref)


def _deployment(d) -> dict:
    from platform_app.services.projects.addresses import deployment_url

    return {"id": d.pk, "project": d.project.slug, "env": d.env, "branch": d.branch, "status": d.status,
            "commit": d.commit_sha, "url": deployment_url(d), "createdAt": d.created_at.isoformat(),
            "errorMessage": d.error_message or None}


def list_workspaces(call: Call) -> dict:
    from platform_app.models import Membership

    members = Membership.objects.filter(user=call.user).select_related("workspace")
    if call.bound_workspace_id:
        members = members.filter(workspace_id=call.bound_workspace_id)
    return {"workspaces": [{"id": m.workspace.pk, "slug": m.workspace.slug, "name": m.workspace.name,
                            "role": m.role} for m in members]}


def list_projects(call: Call, workspace: str) -> dict:
    from platform_app.services.projects.addresses import project_url
    from platform_app.services.projects.selectors import projects_in

    return {"projects": [{"id": p.pk, "slug": p.slug, "name": p.name, "url": project_url(p)}
                         for p in projects_in(workspace=call.workspace(workspace))]}


def get_project(call: Call, workspace: str, project: str) -> dict:
    from platform_app.services.deployments.selectors import project_deployments
    from platform_app.services.projects.addresses import project_url

    p = call.project(workspace, project)
    latest = project_deployments(project=p, limit=1)
    return {"id": p.pk, "slug": p.slug, "name": p.name, "url": project_url(p), "framework": p.framework,
            "productionBranch": p.production_branch, "productionDeploymentId": p.production_deployment_id,
            "latestDeployment": _deployment(latest[0]) if latest else None}


def trigger_deployment(call: Call, workspace: str, project: str, env: str = "production",
                       branch: str | None = None) -> dict:
    from platform_app.services.deployments.deployments import deployment_trigger

    p = call.project(workspace, project)
    return _deployment(deployment_trigger(project=p, env=env, branch=branch, trigger="api", actor=call.user))


def deployment_status(call: Call, workspace: str, deployment: str) -> dict:
    return _deployment(call.deployment(workspace, deployment))


def deployment_logs(call: Call, workspace: str, deployment: str, lines: int = 50) -> dict:
    from platform_app.services.deployments.log_archive import log_lines

    d = call.deployment(workspace, deployment)
    tail = log_lines(d.pk, tail=lines, times=False)
    return {"deployment": d.pk, "status": d.status, "lines": [line.text for line in tail],
            "expiredAt": d.log_expired_at.isoformat() if d.log_expired_at else None}


def rollback(call: Call, workspace: str, project: str, deployment: str | None = None) -> dict:
    from platform_app.services.deployments.deployments import deployment_rollback

    p = call.project(workspace, project)
    return _deployment(deployment_rollback(project=p, deployment_id=deployment, actor=call.user))


def list_env_vars(call: Call, workspace: str, project: str, env: str = "production") -> dict:
    """Names with `read`; plain values with `env:read` (secret values never: the REST reveal needs its header)."""
    from platform_app.services.env.env import env_resolve_detailed, value_of

    p = call.project(workspace, project)
    values = call.allows("env:read")  # the token's scope and the member's role: a viewer never reads values
    return {"env": env, "variables": [
        {"key": var.key, "type": var.type, **({"value": value_of(var)} if values and var.type == "plain" else {})}
        for var, _ in env_resolve_detailed(project=p, environment=env, branch=None)]}


def list_domains(call: Call, workspace: str, project: str) -> dict:
    from platform_app.services.domains.domains import domains_of_project

    p = call.project(workspace, project)
    return {"domains": [{"id": d.pk, "name": d.name, "status": d.status, "primary": d.primary}
                        for d in domains_of_project(p)]}


def doctor_findings(call: Call, workspace: str, deployment: str) -> dict:
    from platform_app.services.deployments.doctor import diagnose

    d = call.deployment(workspace, deployment)
    return {"deployment": d.pk, "status": d.status,
            "findings": [{"rule": f.rule, "title": f.title, "fix": f.fix, "evidence": f.evidence}
                         for f in diagnose(d)]}


TOOLS = {t.name: t for t in (
    Tool("list_workspaces", "read", "The workspaces you belong to, with your role.", {}, (), list_workspaces),
    Tool("list_projects", "read", "The projects of a workspace.", WORKSPACE, ("workspace",), list_projects),
    Tool("get_project", "read", "A project: its address, production deployment and latest deployment.", PROJECT,
         ("workspace", "project"), get_project),
    Tool("trigger_deployment", "deploy", "Build and deploy a project's branch to an environment.",
         {**PROJECT, "env": {"type": "string", "default": "production"}, "branch": {"type": "string"}},
         ("workspace", "project"), trigger_deployment),
    Tool("deployment_status", "read", "A deployment's status, commit, address and error.", DEPLOYMENT,
         ("workspace", "deployment"), deployment_status),
    Tool("deployment_logs", "read", "The last lines of a deployment's build log.",
         {**DEPLOYMENT, "lines": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 50}},
         ("workspace", "deployment"), deployment_logs),
    Tool("rollback", "deploy", "Point production at an earlier ready deployment (the newest other one by default).",
         {**PROJECT, "deployment": {"type": "string"}}, ("workspace", "project"), rollback),
    Tool("list_env_vars", "read", "Environment variable names of an environment (plain values with env:read).",
         {**PROJECT, "env": {"type": "string", "default": "production"}}, ("workspace", "project"), list_env_vars),
    Tool("list_domains", "read", "A project's custom domains and their status.", PROJECT, ("workspace", "project"),
         list_domains),
    Tool("doctor_findings", "read", "What the build doctor finds in a failed deployment's log, with fixes.",
         DEPLOYMENT, ("workspace", "deployment"), doctor_findings),
)}


def tool_call(*, user, credential: Credential, name: str, arguments: dict) -> dict:
    """Run a tool for this caller; ToolRefused for a scope the token lacks or a role too low, ApplicationError
    (404, 400...) as the service says."""
    tool = TOOLS.get(name)
    if tool is None:
        raise NotFound(f"Unknown tool {name!r}.")
    if not scope_allows(credential.scopes, tool.scope):
        raise ToolRefused(f"{name} needs the `{tool.scope}` scope, which this token does not hold.",
                          {"requiredScope": tool.scope, "tokenScopes": sorted(credential.scopes)})
    unknown = set(arguments) - set(tool.properties)
    missing = [k for k in tool.required if k not in arguments]
    wrong = sorted(k for k, v in arguments.items() if k in tool.properties and not _fits(tool.properties[k], v))
    if unknown or missing or wrong:
        raise ApplicationError(f"Arguments of {name}: required {list(tool.required)}, known "
                               f"{sorted(tool.properties)}" + (f"; not as declared: {wrong}." if wrong else "."),
                               code="invalid_params")
    return tool.run(Call(user, credential, tool), **arguments)


MAX_STRING = 200  # ids, slugs, environment and branch names


def _fits(schema: dict, value) -> bool:
    """`value` is of the declared type and range (the input schemas here use only these keywords)."""
    if value is None:
        return True
    if schema.get("type") == "integer":
        return (type(value) is int and schema.get("minimum", value) <= value <= schema.get("maximum", value))
    return isinstance(value, str) and len(value) <= MAX_STRING
