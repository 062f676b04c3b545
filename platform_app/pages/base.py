"""What every platform dashboard page shares, so pages follow the API's rules:

- a workspace is found only for its members (others get 404, as from the API), and its IP allowlist and
  "require SSO" rule apply as they do to its API routes (403);
- `can` says what the member's role allows, by scope, so a page shows no button that would fail
  (`{% if can.deploy %}`); `require` refuses a POST the role does not allow, with the API's 403;
- a project is looked up inside that workspace only.
"""
from config.errors import ApplicationError, Forbidden
from platform_app.services.identity.scopes import ALL_SCOPES, role_allows
from platform_app.services.org.access import Credential, workspace_enter
from platform_app.services.projects.projects import project_get


def workspace_context(request, org_id: str) -> dict:
    """`workspace`, `membership` and `can` (scope → bool) for a signed-in member; 404 for anyone else."""
    access = workspace_enter(user=request.user, ref=org_id, scope=None,
                             credential=Credential(ip=client_ip(request), cookie_session=request.session))
    workspace, membership = access.workspace, access.membership
    can = {scope.replace(":", "_"): role_allows(membership.role, scope) for scope in ALL_SCOPES}
    return {"workspace": workspace, "membership": membership, "can": can}


def project_context(request, org_id: str, project_id: str) -> dict:
    """The workspace context plus `project` (by id or slug, in that workspace only)."""
    context = workspace_context(request, org_id)
    context["project"] = project_get(workspace=context["workspace"], project_id=project_id)
    return context


def page_number(request, last: int = 10_000) -> int:
    """The `page` asked for; anything but a page number up to `last` reads as the first."""
    raw = request.GET.get("page", "")
    if raw.isascii() and raw.isdigit() and len(raw) <= len(str(last)):
        return min(max(int(raw), 1), last)
    return 1


def require(context: dict, scope: str) -> None:
    """Refuse an action the member's role does not allow (403 `forbidden`, as the API)."""
    if not role_allows(context["membership"].role, scope):
        raise Forbidden(f"Your role cannot do this (it needs the `{scope}` scope).")


def client_ip(request) -> str:
    from config import ratelimit

    return ratelimit.client_ip(request)


def form_error(form, exc) -> None:
    """Show a service's refusal on the form: on the named field when the error names one of its fields."""
    details = exc.details if isinstance(getattr(exc, "details", None), dict) else {}
    for field, messages in details.items():
        name = {"currentPassword": "current_password", "gitUrl": "git_url", "git_url": "git_url"}.get(field, field)
        if name in form.fields:
            form.add_error(name, exc.message)
            return
    form.add_error(None, exc.message)


def workspace_form_create(request, form):
    """The workspace a valid new-workspace form makes for the signed-in user, or None (the form then carries the
    service's refusal): the dashboard and the code console both offer it."""
    from platform_app.services.teams.workspaces import workspace_create

    try:
        return workspace_create(user=request.user, name=form.cleaned_data["name"],
                                slug=form.cleaned_data["slug"] or None, ip=client_ip(request))
    except ApplicationError as exc:
        form_error(form, exc)
        return None
