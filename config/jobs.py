"""The one way services hand work to the job queue.

`enqueue(task, *args, **kwargs)` publishes once the current transaction commits (at once outside one), with
the short, bounded retry policy and broker socket timeouts of `config/settings/celery.py`, so a request never
waits long on an unreachable broker. A publish that still fails is logged, never raised: the transaction has
already committed, and the row the job is about stays in a state its beat sweep picks up again (a deployment
`queued` past `BUILD_REQUEUE_AFTER_SECONDS`, a code delivery `queued` past `OTP_REDELIVER_AFTER_SECONDS`;
docs/deployment.md, "When a dependency is down"). Tasks are idempotent, so a second publish is harmless.

`task` is a task's registered name (what services pass: they never import task modules, since tasks import
services) or a task object.
"""
import logging
import threading

from django.conf import settings
from django.db import transaction

from config.celery_app import app as celery_app

logger = logging.getLogger(__name__)


def enqueue(task, *args, **kwargs) -> None:
    """Run `task(*args, **kwargs)` on a worker once the current transaction commits."""
    transaction.on_commit(lambda: publish(task, args, kwargs))


_discovery = threading.Lock()


def _signature(task, args, kwargs):
    if not isinstance(task, str):
        return task.signature(args, kwargs)
    if task not in celery_app.tasks:
        # Register every app's tasks module (as a worker does at start), so the task's own options apply and
        # eager mode runs it inline; a name still unknown afterwards raises NotRegistered, never publishes.
        # One thread at a time: the first requests of a process publish together, and a thread that looked
        # while another was registering the modules found its task missing.
        with _discovery:
            if task not in celery_app.tasks:
                celery_app.autodiscover_tasks(force=True)
    celery_app.tasks[task]  # raises NotRegistered for a name no app declares
    return celery_app.signature(task, args=args, kwargs=kwargs)


def publish(task, args=(), kwargs=None, **options) -> bool:
    """Publish now (tasks and sweeps, which run outside transactions; `options` as `apply_async`'s, e.g.
    `countdown`); False, and a warning, when the broker cannot be reached within the retry policy."""
    signature = _signature(task, tuple(args), kwargs or {})
    if signature.app.conf.task_always_eager:
        # Tests run tasks inline: their errors are the caller's to see, not a broker outage.
        signature.apply_async(**options)
        return True
    try:
        signature.apply_async(retry=True, retry_policy=settings.CELERY_TASK_PUBLISH_RETRY_POLICY, **options)
    except Exception as exc:  # noqa: BLE001 - any broker failure: the beat sweep of the row retries it
        logger.warning("Could not enqueue %s for %s (%s: %s); its beat sweep will enqueue it again.",
                       signature.task, args[0] if args else "-", type(exc).__name__, exc)
        return False
    return True
