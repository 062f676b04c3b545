"""The project's Buckets tab: its buckets with their last measured usage, a form that creates one and shows its
credentials once, and deletion (a bucket holding objects is deleted with them only when that is ticked and its name
typed back). Same service and role rules as the API (docs/buckets.md)."""
from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.urls import path
from django.views.decorators.http import require_POST

from config.errors import ApplicationError
from platform_app.pages.base import client_ip, form_error, project_context, require
from platform_app.services.resources import buckets as services


class BucketForm(forms.Form):
    name = forms.CharField(max_length=63, required=False, label="Bucket name",
                           help_text="Lowercase letters, digits, hyphens and dots; the bucket is named "
                                     "<project slug>-<name>.")


@login_required
def buckets_page(request, org_id, project_id):
    context = project_context(request, org_id, project_id)
    project = context["project"]
    form = BucketForm(request.POST or None)
    created = credentials = None
    if request.method == "POST":
        require(context, "admin")
        if form.is_valid():
            try:
                created, credentials = services.bucket_create(project=project, name=form.cleaned_data["name"],
                                                              actor=request.user, ip=client_ip(request))
            except ApplicationError as exc:
                form_error(form, exc)
            else:
                form = BucketForm()
    context.update(tab="buckets", form=form, created=created, credentials=credentials,
                   buckets=services.buckets_list(project=project), configured=services.buckets_configured())
    return render(request, "platform_app/resources/buckets.html", context, status=400 if form.errors else 200)


@login_required
@require_POST
def bucket_delete(request, org_id, project_id, bucket_id):
    """`force` (with the bucket's name typed back in `confirm`) deletes its objects too."""
    context = project_context(request, org_id, project_id)
    require(context, "admin")
    project = context["project"]
    bucket = services.bucket_get(project=project, bucket_id=bucket_id)
    force = request.POST.get("force") == "on"
    if force and request.POST.get("confirm", "").strip() != bucket.name:
        messages.error(request, f"Type the bucket's name, {bucket.name}, to delete it with its objects.")
    else:
        try:
            deleted = services.bucket_delete(project=project, bucket_id=bucket.pk, force=force, actor=request.user,
                                             ip=client_ip(request))
        except ApplicationError as exc:
            messages.error(request, exc.message)
        else:
            messages.success(request, f"Bucket {bucket.name} deleted"
                                      f"{f' with its {deleted} objects' if deleted else ''}.")
    return redirect("project-buckets", org_id=context["workspace"].slug, project_id=project.slug)


urlpatterns = [
    path("dashboard/<str:org_id>/projects/<str:project_id>/buckets/", buckets_page, name="project-buckets"),
    path("dashboard/<str:org_id>/projects/<str:project_id>/buckets/<str:bucket_id>/delete", bucket_delete,
         name="project-bucket-delete"),
]
