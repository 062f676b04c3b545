"""Development secrets generated once into the data folder (the Django secret key, the variables' encryption key,
the JWT signing key): readable by their owner only, 0600, as a key an SSH client would accept. Production sets
them in the environment instead (docs/settings.md).

Imported by the settings modules, so it imports nothing of Django."""
import os
import secrets
from collections.abc import Callable
from pathlib import Path


def secret_file(path: Path, make: Callable[[], bytes]) -> bytes:
    """The secret in `path`, made by `make()` the first time. Written to a private temporary name and linked into
    place, so two processes starting at once agree on the first one's secret and no one ever reads half a file. A
    file an older version left readable by others is narrowed to 0600."""
    if not path.exists():
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(make())
            os.link(tmp, path)
        except FileExistsError:
            pass
        finally:
            tmp.unlink()
    if path.stat().st_mode & 0o077:
        path.chmod(0o600)
    return path.read_bytes()
