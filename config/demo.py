"""Demo data that `manage.py demo_data` (and so `make run`) loads: each app contributes its own.

An app registers a loader in its `AppConfig.ready()`; the command knows no app by name. A loader is
`load(*, user, workspace, stdout)` and adds its area's demo data idempotently for the demo account."""
from collections.abc import Callable

_LOADERS: list[tuple[str, Callable]] = []


def demo_register(name: str, loader: Callable) -> None:
    """Add `loader` under `name` (registering the same name twice keeps the first: ready() may run twice)."""
    if name not in {registered for registered, _ in _LOADERS}:
        _LOADERS.append((name, loader))


def demo_loaders() -> list[tuple[str, Callable]]:
    """The loaders in the order their apps are installed."""
    return list(_LOADERS)
