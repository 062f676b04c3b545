"""The project's Databases page: its dedicated databases (status, size, variables, backups) with create, back up
now, restore, branch and delete for the `admin` scope (others read). Same services as the API; the credentials of
a database made here are shown once, on the page that made it."""
from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.urls import path
from django.views.decorators.http import require_POST

from config.errors import ApplicationError, NotFound
from platform_app.pages.base import form_error, project_context, require
from platform_app.services.resources import dedicated_dbs as services
from platform_app.services.resources.dedicated_db_variables import database_env_names, database_env_names_planned

RECENT_BACKUPS = 10
# the stylesheet's badge colours for this page's states
BADGES = {"provisioning": "pending", "restoring": "pending", "ready": "ready", "error": "error", "pending": "pending",
          "done": "ready", "failed": "error"}


class DatabaseForm(forms.Form):
    name = forms.CharField(max_length=40,
                           help_text="Lower-case letters, digits and dashes, starting with a letter.")


def _render(request, context, *, form=None, created=None, status=200):
    project = context["project"]
    databases = list(services.databases_list(project=project, recent=RECENT_BACKUPS))
    env_names = database_env_names(project=project)
    for database in databases:
        database.badge = BADGES[database.status]
        database.variables = env_names.get(database.pk, [])
        for backup in database.recent_backups:
            backup.badge = BADGES[backup.status]
    active = any(d.status in ("provisioning", "restoring") or any(b.status == "pending" for b in d.recent_backups)
                 for d in databases)
    context.update(tab="databases", form=form or DatabaseForm(), databases=databases, created=created,
                   active=active)
    if request.htmx and request.method == "GET":  # the list's own refresh while work runs
        return render(request, "platform_app/resources/_databases.html", context)
    return render(request, "platform_app/resources/databases.html", context, status=status)


def _created(project, database, credentials) -> dict:
    return {"database": database, "url": services.psql_url(credentials) if credentials else "",
            "variables": database_env_names_planned(project=project, database=database)}


@login_required
def databases_page(request, org_id, project_id):
    context = project_context(request, org_id, project_id)
    form, created = DatabaseForm(request.POST or None), None
    if request.method == "POST":
        require(context, "admin")
        if form.is_valid():
            try:
                created = _created(context["project"], *services.database_create(
                    project=context["project"], name=form.cleaned_data["name"]))
            except ApplicationError as exc:
                form_error(form, exc)
            else:
                form = DatabaseForm()
    return _render(request, context, form=form, created=created, status=400 if form.errors else 200)


@login_required
@require_POST
def database_action(request, org_id, project_id, db_id, action):
    context = project_context(request, org_id, project_id)
    require(context, "admin")
    project = context["project"]
    try:
        if action == "backup":
            services.backup_create(project=project, db_id=db_id)
            messages.success(request, "Backup started.")
        elif action == "restore":
            services.database_restore(project=project, db_id=db_id, backup_id=request.POST.get("backup", ""))
            messages.success(request, "Restore started: the database answers as before until it is done.")
        elif action == "branch":
            created = _created(project, *services.database_branch(project=project, db_id=db_id,
                                                                  name=request.POST.get("name", "")))
            return _render(request, context, created=created)
        elif action == "delete":
            services.database_delete(project=project, db_id=db_id)
            messages.success(request, "Database deleted.")
        else:
            raise NotFound("Unknown action.")
    except ApplicationError as exc:
        if exc.status == 404:
            raise
        messages.error(request, exc.message)
        return _render(request, context, status=exc.status)
    return redirect("project-databases", org_id=context["workspace"].slug, project_id=project.pk)


urlpatterns = [
    path("dashboard/<str:org_id>/projects/<str:project_id>/databases/", databases_page, name="project-databases"),
    path("dashboard/<str:org_id>/projects/<str:project_id>/databases/<str:db_id>/<str:action>", database_action,
         name="project-database-action"),
]
