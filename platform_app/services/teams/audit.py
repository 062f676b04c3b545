"""Writing the workspace audit log."""
from platform_app.models import AuditEvent


def audit_record(*, workspace, actor, action: str, target=None, data: dict | None = None, ip: str = "") -> AuditEvent:
    """Append one entry. `target` is any model instance (type and id are recorded)."""
    return AuditEvent.objects.create(
        workspace=workspace,
        actor=actor if getattr(actor, "is_authenticated", False) else None,
        action=action,
        target_type=target._meta.model_name if target is not None else "",
        target_id=str(target.pk) if target is not None else "",
        data=data or {},
        ip=ip,
    )
