"""Feedback: anyone (signed in or not) sends a message with a category, the page it came from and an optional
reply address; staff triage it in the inbox (status, assignee, note) and delete it. Sends are limited per user,
and per client address for visitors who are not signed in (FEEDBACK_*_PER_HOUR, in the cache)."""
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import validate_email
from django.db import transaction

from config import ratelimit
from config.errors import NotFound, ValidationFailed
from platform_app.models import Feedback

User = get_user_model()
HOUR = 3600


def _message(value) -> str:
    text = (value or "").strip() if isinstance(value, str) else ""
    if not text:
        raise ValidationFailed("message is required.", details={"message": ["Required."]})
    if len(text) > settings.FEEDBACK_MAX_MESSAGE_CHARS:
        raise ValidationFailed(f"message is longer than {settings.FEEDBACK_MAX_MESSAGE_CHARS} characters.",
                               details={"message": [f"At most {settings.FEEDBACK_MAX_MESSAGE_CHARS} characters."]})
    return text


def feedback_create(*, message: str, category: str, page: str = "", email: str = "", user=None,
                    ip: str = "") -> Feedback:
    """A new inbox item; 429 past the sender's hourly limit (counted before anything is written)."""
    text = _message(message)
    if category not in Feedback.Category.values:
        raise ValidationFailed(f"category must be one of {', '.join(Feedback.Category.values)}.",
                               details={"category": [f"One of {', '.join(Feedback.Category.values)}."]})
    page = (page or "").strip()
    if len(page) > 500:
        raise ValidationFailed("page is longer than 500 characters.", details={"page": ["At most 500 characters."]})
    email = (email or "").strip().lower()
    if email:
        try:
            validate_email(email)
        except DjangoValidationError:
            raise ValidationFailed("email is not an email address.", details={"email": ["Not an email address."]})
    signed_in = getattr(user, "is_authenticated", False)
    if signed_in:
        ratelimit.consume(f"feedback:user:{user.pk}", settings.FEEDBACK_PER_USER_PER_HOUR, HOUR,
                          "Too much feedback at once; try again later.")
    else:
        ratelimit.consume(f"feedback:ip:{ip}", settings.FEEDBACK_ANONYMOUS_PER_HOUR, HOUR,
                          "Too much feedback from this address; try again later.")
    return Feedback.objects.create(message=text, category=category, page=page, email=email,
                                   user=user if signed_in else None, ip=ip[:64])


def feedback_inbox(*, status: str | None = None, category: str | None = None):
    items = Feedback.objects.select_related("user", "assignee")
    if status is not None:  # an empty value is no filter of the enum: refused like any other
        if status not in Feedback.Status.values:
            raise ValidationFailed(f"status must be one of {', '.join(Feedback.Status.values)}.",
                                   details={"status": [f"One of {', '.join(Feedback.Status.values)}."]})
        items = items.filter(status=status)
    if category is not None:
        if category not in Feedback.Category.values:
            raise ValidationFailed(f"category must be one of {', '.join(Feedback.Category.values)}.",
                                   details={"category": [f"One of {', '.join(Feedback.Category.values)}."]})
        items = items.filter(category=category)
    return items


def feedback_get(*, feedback_id: str) -> Feedback:
    item = Feedback.objects.select_related("user", "assignee").filter(pk=feedback_id).first()
    if item is None:
        raise NotFound("No such feedback.")
    return item


def staff_members():
    return User.objects.filter(is_staff=True, is_active=True).order_by("email")


_UNSET = object()


@transaction.atomic
def feedback_update(*, feedback_id: str, status: str | None = None, assignee=_UNSET, note: str | None = None
                    ) -> Feedback:
    """Triage: `status` new/triaged/done, `assignee` a staff user's id (or email), or None to unassign, `note`."""
    item = Feedback.objects.select_for_update().filter(pk=feedback_id).first()
    if item is None:
        raise NotFound("No such feedback.")
    if status is not None:
        if status not in Feedback.Status.values:
            raise ValidationFailed(f"status must be one of {', '.join(Feedback.Status.values)}.",
                                   details={"status": [f"One of {', '.join(Feedback.Status.values)}."]})
        item.status = status
    if assignee is not _UNSET:
        if assignee in (None, ""):
            item.assignee = None
        else:
            found = (staff_members().filter(pk=assignee).first() if isinstance(assignee, str) else None) or \
                    (staff_members().filter(email__iexact=assignee).first() if isinstance(assignee, str) else None)
            if found is None:
                raise ValidationFailed("assignee must be a staff user's id or email.",
                                       details={"assignee": ["Not a staff user."]})
            item.assignee = found
    if note is not None:
        if len(note) > settings.FEEDBACK_MAX_MESSAGE_CHARS:
            raise ValidationFailed("note is too long.", details={"note": ["Too long."]})
        item.note = note.strip()
    item.save()
    return feedback_get(feedback_id=item.pk)


@transaction.atomic
def feedback_delete(*, feedback_id: str) -> None:
    deleted, _ = Feedback.objects.filter(pk=feedback_id).delete()
    if not deleted:
        raise NotFound("No such feedback.")
