"""What the staff-only routes of the org area share: feedback inbox and growth (`is_staff`; others 403)."""
from config.errors import Forbidden


def staff_only(request) -> None:
    """403 `forbidden` unless the caller is staff (after the scope check, like the admin surface)."""
    if not getattr(request.user, "is_staff", False):
        raise Forbidden("Only platform staff can do this.", details={"staff": False})
