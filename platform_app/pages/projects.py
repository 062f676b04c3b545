"""Project pages: new project (from a starter template or a Git URL, with the detected framework shown
before it is created), the project's deployments, and its settings. Same services and roles as the API."""
from django import forms
from django.db import transaction
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render

from config.errors import ApplicationError
from platform_app.pages.base import client_ip, form_error, project_context, require, workspace_context
from platform_app.services.agents import images
from platform_app.services.billing.caps import usage_cap_check
from platform_app.services.deployments import deployments as deployment_services
from platform_app.services.deployments.listings import deployment_list_context
from platform_app.services.deployments.selectors import project_deployments, rollback_candidates
from platform_app.services.env.env import environment_names
from platform_app.services.projects import projects as project_services
from platform_app.services.projects.inspect import repository_detect
from platform_app.services.projects.templates import templates_list
from platform_app.services.providers.git_connections import repos_list
from platform_app.services.providers.git_urls import git_remote_for_provider
from platform_app.services.providers.selectors import git_connections_of


class TemplateProjectForm(forms.Form):
    name = forms.CharField(max_length=100, label="Project name")
    template = forms.ChoiceField(choices=(), widget=forms.RadioSelect, label="Starter template")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["template"].choices = [(t["name"], f"{t['title']} ({t['framework']})") for t in templates_list()]


class GitProjectForm(forms.Form):
    """A Git URL, or (hidden) a connected provider's repository."""
    git_url = forms.CharField(max_length=500, label="Git repository URL", required=False,
                              help_text="An https URL, e.g. https://git.example.com/team/app.git")
    provider = forms.CharField(max_length=16, required=False, widget=forms.HiddenInput)
    repo = forms.CharField(max_length=200, required=False, widget=forms.HiddenInput)
    branch = forms.CharField(max_length=200, required=False, label="Production branch",
                             help_text="Empty = the repository's default branch.")
    name = forms.CharField(max_length=100, required=False, label="Project name", help_text="Empty = from the URL.")
    framework = forms.CharField(max_length=32, required=False, widget=forms.HiddenInput)


class ImageProjectForm(forms.Form):
    """An image in a registry, with its credentials when the registry asks for some."""
    image_ref = forms.CharField(max_length=300, label="Image",
                                help_text="[registry/]name[:tag], e.g. ghcr.io/team/app:1.2 (no registry: Docker Hub)")
    name = forms.CharField(max_length=100, label="Project name")
    username = forms.CharField(max_length=200, required=False, label="Registry user name", strip=False,
                               help_text="Empty for a public image.")
    password = forms.CharField(max_length=4096, required=False, label="Registry password or token", strip=False,
                               widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}))

    def clean(self):
        values = super().clean()
        if bool(values.get("username")) != bool(values.get("password")):
            raise forms.ValidationError("Give both the registry user name and its password, or neither.")
        return values


def _first_image_deployment(request, project):
    """Deploy a new image project at once: its tag resolved now, run by the workspace's nodes."""
    deployment = images.deployment_from_image(project=project, image_ref="", env="production", actor=request.user)
    if deployment.status == deployment.Status.ERROR:
        messages.warning(request, f"Project “{project.name}” created, but its first deployment failed: "
                                  f"{deployment.error_message}")
    else:
        messages.success(request, f"Project “{project.name}” created; its image {deployment.snapshot['imageDigest']} "
                                  f"is on its way to the nodes.")
    return redirect("deployment", org_id=project.workspace.slug, deployment_id=deployment.pk)


def _first_deployment(request, project):
    """Deploy a new project's production branch at once, as the big platforms do. Refused (the cap reached since
    the page checked it), the project stays and its page says why."""
    try:
        deployment = deployment_services.deployment_trigger(project=project, env="production", branch=None,
                                                            trigger="manual", actor=request.user,
                                                            ip=client_ip(request))
    except ApplicationError as exc:
        messages.warning(request, f"Project “{project.name}” created, but its first deployment was refused: "
                                  f"{exc.message}")
        return redirect("project", org_id=project.workspace.slug, project_id=project.pk)
    messages.success(request, f"Project “{project.name}” created; its first deployment is on its way.")
    return redirect("deployment", org_id=project.workspace.slug, deployment_id=deployment.pk)


def _name_from_url(url: str) -> str:
    tail = url.rstrip("/").rsplit("/", 1)[-1].removesuffix(".git")
    return tail[:100] or "project"


def _provider_repos(request, context) -> dict:
    """`?provider=<name>`: that connection's repositories, read from the provider's API (or its error)."""
    provider = request.GET.get("provider", "")[:16]
    if not provider or not context["can"]["admin"]:
        return {"provider": None}
    try:
        return {"provider": provider, "repos": repos_list(workspace=context["workspace"], provider=provider)}
    except ApplicationError as exc:
        return {"provider": provider, "repos": [], "repos_error": exc.message}


@login_required
def project_new(request, org_id):
    """A starter template, a Git URL (`inspect` shows the detection, `create` creates it), or an image in a
    registry (`image`: created and deployed at once)."""
    context = workspace_context(request, org_id)
    action = request.POST.get("action")
    template_form = TemplateProjectForm(request.POST if action == "template" else None, prefix="t")
    git_form = GitProjectForm(request.POST if action in ("inspect", "git") else None, prefix="g")
    image_form = ImageProjectForm(request.POST if action == "image" else None, prefix="i")
    detection = None
    if request.method == "POST":
        require(context, "admin")
        workspace, ip = context["workspace"], client_ip(request)
        form = {"template": template_form, "image": image_form}.get(action, git_form)
        if form.is_valid():
            values = form.cleaned_data
            try:
                if action in ("template", "git", "image"):  # all deploy at once: at the cap, create nothing
                    usage_cap_check(workspace=workspace)
                if action == "image":
                    with transaction.atomic():  # refused credentials leave no project behind
                        project = project_services.project_create_from_image(
                            workspace=workspace, actor=request.user, name=values["name"],
                            image_ref=values["image_ref"], ip=ip)
                        if values["username"]:
                            images.registry_credentials_set(project=project, username=values["username"],
                                                            password=values["password"], actor=request.user, ip=ip)
                    return _first_image_deployment(request, project)
                if action == "template":
                    project = project_services.project_create_from_template(
                        workspace=workspace, actor=request.user, name=values["name"], template=values["template"],
                        ip=ip)
                    return _first_deployment(request, project)
                source = values["repo"] or values["git_url"]
                if action == "git":  # confirmed after `inspect` showed the detection
                    framework = values["framework"] if values["framework"] != "unknown" else ""
                    project = project_services.project_create_from_git(
                        workspace=workspace, actor=request.user, name=values["name"] or _name_from_url(source),
                        git_url=values["git_url"], provider=values["provider"], repo=values["repo"],
                        production_branch=values["branch"] or None, ip=ip, framework=framework)
                    return _first_deployment(request, project)
                remote = (git_remote_for_provider(workspace=workspace, provider=values["provider"], repo=values["repo"])
                          if values["provider"] and values["repo"] else None)
                detection = repository_detect(user=request.user, url=values["git_url"], remote=remote,
                                              branch=values["branch"] or None)
                git_form = GitProjectForm(prefix="g", initial={**values, "branch": detection["branch"],
                                                               "framework": detection["framework"]})
            except ApplicationError as exc:
                form_error(form, exc)
                detection = None
    context.update(tab="projects", template_form=template_form, git_form=git_form, image_form=image_form,
                   detection=detection,
                   templates=templates_list(), connections=git_connections_of(workspace=context["workspace"]),
                   **_provider_repos(request, context))
    return render(request, "platform_app/projects/new.html", context,
                  status=400 if template_form.errors or git_form.errors or image_form.errors else 200)


class DeployForm(forms.Form):
    env = forms.ChoiceField(choices=(), label="Environment")
    branch = forms.CharField(max_length=200, required=False, label="Branch", help_text="Empty = production branch.")

    def __init__(self, *args, project, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["env"].choices = [(name, name) for name in environment_names(project)]


@login_required
def project_page(request, org_id, project_id):
    """Production address, the deployments (status, environment, branch, commit, who, duration, queue
    position) with redeploy, rollback and cancel, and a deploy form; POST deploys."""
    context = project_context(request, org_id, project_id)
    project = context["project"]
    form = DeployForm(request.POST or None, project=project, initial={"env": "production"})
    if project.source == project.Source.IMAGE:
        del form.fields["branch"]  # an image has a tag, resolved when it is deployed
    if request.method == "POST":
        require(context, "deploy")
        if form.is_valid():
            try:
                if project.source == project.Source.IMAGE:  # the image's tag, resolved to a digest now
                    deployment = images.deployment_from_image(project=project, image_ref="",
                                                              env=form.cleaned_data["env"], actor=request.user)
                else:
                    deployment = deployment_services.deployment_trigger(
                        project=project, env=form.cleaned_data["env"], branch=form.cleaned_data["branch"] or None,
                        trigger="manual", actor=request.user, ip=client_ip(request))
            except ApplicationError as exc:
                form_error(form, exc)
            else:
                return redirect("deployment", org_id=context["workspace"].slug, deployment_id=deployment.pk)
    deployments = project_deployments(project=project)
    extra = deployment_list_context(deployments=deployments)
    for d in deployments:
        d.queue_position, d.needs_redeploy = extra["queue_positions"][d.pk], extra["redeploy_flags"][d.pk]
    context.update(tab="deployments", form=form, deployments=deployments,
                   rollback_to=rollback_candidates(project=project),
                   active=any(not d.is_finished for d in deployments))
    if request.htmx and request.method == "GET":  # the table's own refresh while builds run
        return render(request, "platform_app/projects/_deployments.html", context)
    return render(request, "platform_app/projects/project.html", context, status=400 if form.errors else 200)


@login_required
def project_rollback(request, org_id, project_id):
    context = project_context(request, org_id, project_id)
    require(context, "deploy")
    if request.method != "POST":
        return redirect("project", org_id=org_id, project_id=project_id)
    target = deployment_services.deployment_rollback(project=context["project"],
                                                     deployment_id=request.POST.get("deployment") or None,
                                                     actor=request.user, ip=client_ip(request))
    messages.success(request, f"Production now serves {target.pk} ({target.commit_sha[:7] or target.branch}).")
    return redirect("project", org_id=context["workspace"].slug, project_id=context["project"].slug)
