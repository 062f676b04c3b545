"""The feedback page every dashboard page links to (signed in or not), and the staff inbox where it is triaged
(status, assignee, note) and deleted. Same services and limits as `/v1/feedback`."""
from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from config.errors import ApplicationError, Forbidden
from platform_app.models import Feedback
from platform_app.pages.base import client_ip, form_error
from platform_app.services.org import feedback as services


class FeedbackForm(forms.Form):
    category = forms.ChoiceField(choices=Feedback.Category.choices, initial=Feedback.Category.IDEA)
    message = forms.CharField(max_length=5000, widget=forms.Textarea(attrs={"rows": 6}))
    email = forms.EmailField(max_length=254, required=False, label="Email (optional)",
                             help_text="If you would like an answer.")
    page = forms.CharField(max_length=500, required=False, widget=forms.HiddenInput)


def _page_of(request) -> str:
    page = (request.POST.get("page") or request.GET.get("page") or "")[:500]
    return page if page.startswith("/") and not page.startswith("//") else ""


def feedback_page(request):
    page = _page_of(request)
    form = FeedbackForm(request.POST or None, initial={"page": page})
    status = 200
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            services.feedback_create(message=data["message"], category=data["category"], page=page,
                                     email=data["email"], user=request.user, ip=client_ip(request))
        except ApplicationError as exc:
            form_error(form, exc)
            status = exc.status  # 400, or 429 past the hourly limit
        else:
            messages.success(request, "Thank you: your feedback was sent.")
            return redirect(page or "feedback")
    return render(request, "platform_app/org/feedback.html", {"form": form, "page": page},
                  status=status if status != 200 else (400 if form.errors else 200))


# Staff inbox -------------------------------------------------------------------------------------

def _staff(request) -> None:
    if not request.user.is_staff:
        raise Forbidden("Only platform staff can open the feedback inbox.")


@login_required
def inbox_page(request):
    _staff(request)
    status = request.GET.get("status", "")
    items = services.feedback_inbox(status=status if status in Feedback.Status.values else None)[:200]
    return render(request, "platform_app/org/inbox.html", {
        "items": items, "status": status, "statuses": Feedback.Status.values, "staff": services.staff_members()})


@login_required
@require_POST
def inbox_item(request, feedback_id):
    _staff(request)
    if request.POST.get("delete"):
        services.feedback_delete(feedback_id=feedback_id)
        messages.success(request, "Feedback deleted.")
    else:
        services.feedback_update(feedback_id=feedback_id, status=request.POST.get("status") or None,
                                 assignee=request.POST.get("assignee") or None, note=request.POST.get("note", ""))
        messages.success(request, "Feedback updated.")
    return redirect("feedback-inbox")
