"""Artifacts and build sources, kept as archives through Django's storage API (`STORAGES["artifacts"]`: the
filesystem, or an S3-compatible bucket), and served from a checked, unpacked copy under ARTIFACT_ROOT.

- `artifact_store(deployment, stream)`: a builder's upload. Bounded, unpacked with the archive rules
  (platform_app/sandbox/archive.py: no link out, no device, size and count capped) into ARTIFACT_ROOT/<id>,
  then kept in storage with its SHA-256. Refused → `archive.Refused` naming the path.
- `artifact_local(deployment)`: the unpacked copy the edge and Caddy serve; a web host that lacks it (another
  host, an emptied disk) fetches the archive from storage and unpacks it once.
- `artifact_response(deployment)`: what a node downloads: the archive, or a redirect to a presigned URL.
"""
import hashlib
import shutil
import tempfile
import threading
from pathlib import Path

from django.conf import settings
from django.core.files import File
from django.core.files.storage import storages
from django.http import FileResponse, HttpResponseRedirect

from platform_app.sandbox import archive

CHUNK = 1 << 20
_unpacking = threading.Lock()


def storage():
    return storages["artifacts"]


def artifact_name(deployment_id: str) -> str:
    return f"artifacts/{deployment_id}.tar.gz"


def source_name(deployment_id: str) -> str:
    return f"sources/{deployment_id}.tar.gz"


def _unpack(path: Path, dest: Path) -> None:
    with open(path, "rb") as stream:
        archive.unpack(stream, dest, max_bytes=settings.ARTIFACT_MAX_BYTES, max_files=settings.ARTIFACT_MAX_FILES)


def artifact_store(*, deployment, stream, length: int) -> tuple[str, int]:
    """Check, unpack and keep the uploaded archive of `length` bytes read from `stream`; (sha256, bytes)."""
    digest = hashlib.sha256()
    with tempfile.NamedTemporaryFile(suffix=".tar.gz", dir=_scratch()) as spooled:
        left = length
        while left > 0:
            chunk = stream.read(min(CHUNK, left))
            if not chunk:
                raise archive.Refused("", "the upload ended before its Content-Length")
            spooled.write(chunk)
            digest.update(chunk)
            left -= len(chunk)
        spooled.flush()
        _unpack(Path(spooled.name), Path(settings.ARTIFACT_ROOT) / deployment.pk)
        spooled.seek(0)
        storage().delete(artifact_name(deployment.pk))  # a retried upload replaces, never renames
        storage().save(artifact_name(deployment.pk), File(spooled))
    return digest.hexdigest(), length


def _scratch() -> Path:
    folder = Path(settings.BUILD_ROOT)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def artifact_local(deployment) -> Path | None:
    """The unpacked artifact of a ready deployment on this host, fetched from storage if this host lacks it;
    None when there is none to serve."""
    if not deployment.artifact_path:
        return None
    root = Path(settings.ARTIFACT_ROOT) / deployment.artifact_path
    if root.is_dir() or not deployment.artifact_sha256:
        return root
    with _unpacking:  # one fetch per process, not one per concurrent request
        if not root.is_dir():
            try:
                with storage().open(artifact_name(deployment.pk), "rb") as stored, \
                        tempfile.NamedTemporaryFile(suffix=".tar.gz", dir=_scratch()) as local:
                    shutil.copyfileobj(stored, local, CHUNK)
                    local.flush()
                    _unpack(Path(local.name), root)
            except (OSError, archive.Refused):
                return root
    return root


def artifact_response(deployment):
    """The archive for a node: a redirect to a presigned URL where storage makes one, else the file itself."""
    name = artifact_name(deployment.pk)
    try:
        path = storage().path(name)
    except NotImplementedError:  # object storage: the node fetches it there, not through this process
        return HttpResponseRedirect(storage().url(name))
    response = FileResponse(open(path, "rb"), content_type="application/gzip")
    response["X-Artifact-Sha256"] = deployment.artifact_sha256
    return response


def source_store(*, deployment_id: str, path: Path) -> str:
    with open(path, "rb") as stream:
        return storage().save(source_name(deployment_id), File(stream))


def source_copy(*, deployment_id: str, name: str) -> str:
    """A build's own copy of an archive kept in storage (an upload): its source is deleted when the build ends."""
    with storage().open(name, "rb") as kept:
        return storage().save(source_name(deployment_id), File(kept))


def source_open(name: str):
    return storage().open(name, "rb")


def source_delete(name: str) -> None:
    try:
        storage().delete(name)
    except OSError:
        pass
