"""Folders sent to be built (`svc deploy`): a tar.gz read with a bound, checked with the archive rules (no link
out, no device, fifo or hard link, size and file count capped: platform_app/sandbox/archive.py), kept in
artifact storage once per content and project, and unpacked again into the build's scratch folder, where it is
built exactly like a Git checkout (builds.py)."""
import hashlib
import os
import tempfile
from pathlib import Path

from django.conf import settings
from django.core.files import File
from django.db import IntegrityError, transaction

from config.errors import ApplicationError, ValidationFailed
from platform_app.models import SourceUpload
from platform_app.sandbox import archive
from platform_app.sandbox.files import remove_tree
from platform_app.services.deployments import artifacts

CHUNK = 1 << 20


class UploadTooLarge(ApplicationError):
    status, code = 413, "upload_too_large"


def _limits_refusal(exc: archive.Refused) -> ApplicationError:
    if isinstance(exc, archive.TooManyFiles):
        return ValidationFailed(f"The folder holds more than {settings.UPLOAD_MAX_FILES} files.",
                                code="upload_too_many_files", details={"limitFiles": settings.UPLOAD_MAX_FILES})
    where = f"{exc.path}: " if exc.path else ""
    return ValidationFailed(f"The upload was refused: {where}{exc.reason}.", code="upload_refused",
                            details={"path": exc.path or None})


def source_upload_create(*, project, stream, length: int, actor=None) -> SourceUpload:
    """Read `length` bytes of tar.gz from `stream` and keep them for `project` (the same content once)."""
    limit = settings.UPLOAD_MAX_BYTES
    if length > limit:
        raise UploadTooLarge(f"The upload is {length} bytes; the limit is {limit} bytes (UPLOAD_MAX_BYTES).",
                             details={"limitBytes": limit})
    digest = hashlib.sha256()
    scratch = Path(tempfile.mkdtemp(prefix="upload-", dir=artifacts._scratch()))
    try:
        spooled = scratch / "source.tar.gz"
        with open(spooled, "wb") as out:
            left = length
            while left > 0:
                chunk = stream.read(min(CHUNK, left))
                if not chunk:
                    raise ValidationFailed("The upload ended before its Content-Length.", code="upload_refused")
                out.write(chunk)
                digest.update(chunk)
                left -= len(chunk)
        sha256 = digest.hexdigest()
        existing = SourceUpload.objects.filter(project=project, sha256=sha256).first()
        if existing is not None:
            return existing
        files = source_unpack(spooled, scratch / "src")
        name = f"sources/uploads/{project.pk}/{sha256}.tar.gz"
        with open(spooled, "rb") as kept:
            if not artifacts.storage().exists(name):
                name = artifacts.storage().save(name, File(kept))
        try:
            with transaction.atomic():
                return SourceUpload.objects.create(project=project, sha256=sha256, size=length, files=files,
                                                   storage_name=name,
                                                   uploaded_by=actor if getattr(actor, "pk", None) else None)
        except IntegrityError:  # the same content sent twice at once
            return SourceUpload.objects.get(project=project, sha256=sha256)
    finally:
        remove_tree(scratch)


def source_unpack(path: Path, dest: Path) -> int:
    """Unpack an upload with the archive rules; how many files (and links) it holds. Refusals are 400s."""
    try:
        with open(path, "rb") as stream:
            archive.unpack(stream, dest, max_bytes=settings.ARTIFACT_MAX_BYTES, max_files=settings.UPLOAD_MAX_FILES)
    except archive.Refused as exc:
        raise _limits_refusal(exc) from None
    return sum(len(names) for _, _, names in os.walk(dest))  # links are not followed


def source_upload_fetch(upload: SourceUpload, dest: Path) -> None:
    """The upload unpacked into `dest` for a build (checked again: storage is not trusted more than a client)."""
    with tempfile.NamedTemporaryFile(suffix=".tar.gz", dir=artifacts._scratch()) as local:
        with artifacts.storage().open(upload.storage_name, "rb") as kept:
            for chunk in iter(lambda: kept.read(CHUNK), b""):
                local.write(chunk)
        local.flush()
        source_unpack(Path(local.name), dest)
