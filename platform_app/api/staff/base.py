"""What every `/v1/admin/...` view shares: staff only.

Checks, in order: authenticate (401) → a token must hold the `admin` scope (403 `insufficient_scope`, from
PlatformView) → the user must be staff (`is_staff`) and a token must not be bound to a workspace (403
`forbidden`)."""
from config.errors import Forbidden
from platform_app.api.base import PlatformView


class StaffView(PlatformView):
    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        if not request.user.is_authenticated or getattr(self, request.method.lower(), None) is None:
            return
        if not request.user.is_staff:
            raise Forbidden("Only staff can use the admin API.", details={"staff": False})
        actor = self.actor
        if actor and actor.workspace_id:
            raise Forbidden("A token bound to one workspace cannot use the admin API.",
                            details={"orgId": actor.workspace_id})
