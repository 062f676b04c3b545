"""Buckets: S3-compatible object storage for a project, on the platform's endpoint (docs/buckets.md).

A bucket is made with the operator's credentials (BUCKETS_S3_*): a real bucket named
`<BUCKETS_NAME_PREFIX><project slug>-<name>`, and an IAM user whose inline policy allows only that bucket and its
objects, with one access key. That key (the secret stored encrypted, shown once) is what the project's builds and
instances get as managed variables; nothing else of the operator's reaches them. An endpoint without the IAM API
gets no bucket: credentials that open every bucket are never handed out (409 `addon_unavailable`).

The row is written first (`creating`, its unique name reserves the bucket), the outside calls follow outside any
transaction, and whatever failed is undone before the answer. Usage (objects, bytes) is counted by a worker
(`buckets_usage_refresh`, beat); lists show the last count. A bucket whose project is deleted is emptied and
removed by `buckets_reap`, as are rows a crash left half made.
"""
import ipaddress
import json
import logging
import re
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from config.errors import ApplicationError, Conflict, NotFound, ServiceUnavailable, ValidationFailed
from platform_app.models import Bucket, Project
from platform_app.services.env.crypto import decrypt, encrypt
from platform_app.services.resources.variables import Managed
from platform_app.services.teams.audit import audit_record

logger = logging.getLogger(__name__)

LABEL = re.compile(r"^[a-z0-9.-]+$")
RESERVED_PREFIXES = ("xn--", "sthree-", "amzn-s3-demo-")
RESERVED_SUFFIXES = ("-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3")
BUCKET_ACTIONS = ["s3:ListBucket", "s3:GetBucketLocation", "s3:ListBucketMultipartUploads", "s3:ListBucketVersions"]
OBJECT_ACTIONS = ["s3:GetObject", "s3:PutObject", "s3:DeleteObject", "s3:GetObjectVersion", "s3:DeleteObjectVersion",
                  "s3:AbortMultipartUpload", "s3:ListMultipartUploadParts", "s3:GetObjectTagging",
                  "s3:PutObjectTagging"]
STALE_CREATING = timedelta(minutes=10)  # a row still `creating` this long after its request: that process died


# Configuration ----------------------------------------------------------------------------------

class AddonUnavailable(ApplicationError):
    status, code = 409, "addon_unavailable"


def _require_configured() -> None:
    if not settings.BUCKETS_S3_ENDPOINT:
        raise AddonUnavailable("Buckets are not offered on this platform: the operator sets BUCKETS_S3_ENDPOINT "
                               "(and BUCKETS_S3_ACCESS_KEY_ID, BUCKETS_S3_SECRET_ACCESS_KEY).",
                               details={"setting": "BUCKETS_S3_ENDPOINT"})


def buckets_configured() -> bool:
    return bool(settings.BUCKETS_S3_ENDPOINT)


def _iam_endpoint() -> str:
    return settings.BUCKETS_S3_IAM_ENDPOINT or settings.BUCKETS_S3_ENDPOINT


def _client(service: str, endpoint: str):
    import boto3
    from botocore.config import Config

    timeout = settings.BUCKETS_S3_TIMEOUT_SECONDS
    config = Config(connect_timeout=timeout, read_timeout=timeout, retries={"max_attempts": 2, "mode": "standard"},
                    s3={"addressing_style": "path"}, signature_version="s3v4")
    return boto3.client(service, endpoint_url=endpoint, region_name=settings.BUCKETS_S3_REGION,
                        aws_access_key_id=settings.BUCKETS_S3_ACCESS_KEY_ID,
                        aws_secret_access_key=settings.BUCKETS_S3_SECRET_ACCESS_KEY, config=config)


def _s3():
    return _client("s3", settings.BUCKETS_S3_ENDPOINT)


def _iam():
    return _client("iam", _iam_endpoint())


def _error_code(exc) -> str:
    return getattr(exc, "response", {}).get("Error", {}).get("Code", "") or type(exc).__name__


def _error_message(exc) -> str:
    return getattr(exc, "response", {}).get("Error", {}).get("Message", "") or str(exc)


def _unreachable(exc) -> ServiceUnavailable:
    logger.warning("bucket endpoint %s failed: %s", settings.BUCKETS_S3_ENDPOINT, exc)
    return ServiceUnavailable("The object storage endpoint did not answer; try again shortly.",
                              code="storage_unavailable", details={"reason": _error_code(exc)})


def _iam_unavailable(exc) -> AddonUnavailable:
    logger.warning("IAM at %s failed: %s", _iam_endpoint(), exc)
    return AddonUnavailable(
        "Buckets need the IAM API to make credentials that reach only the new bucket, and the endpoint refused or "
        f"did not answer ({_error_code(exc)}). The operator sets BUCKETS_S3_IAM_ENDPOINT to an endpoint that offers "
        "IAM (and admin credentials allowed to manage users).",
        details={"setting": "BUCKETS_S3_IAM_ENDPOINT", "reason": _error_code(exc)})


# Names ------------------------------------------------------------------------------------------

def _refuse_name(rule: str, message: str):
    raise ValidationFailed(message, code="invalid_bucket_name", details={"name": [message], "rule": rule})


def bucket_name_for(*, project, label: str) -> str:
    """The bucket's name at the endpoint for the name asked, checked against S3's naming rules (400 naming the
    rule broken, before anything is asked of S3)."""
    if not label:
        _refuse_name("required", "name is required: lowercase letters, digits, hyphens and dots.")
    if not LABEL.match(label):
        _refuse_name("characters", "A bucket name holds only lowercase letters, digits, hyphens (-) and dots (.).")
    name = f"{settings.BUCKETS_NAME_PREFIX}{project.slug}-{label}"
    if not 3 <= len(name) <= 63:
        _refuse_name("length", f"A bucket name is 3 to 63 characters; `{name}` (the project's slug, a hyphen and "
                               f"the name) has {len(name)}.")
    if not LABEL.match(name):
        _refuse_name("characters", "A bucket name holds only lowercase letters, digits, hyphens (-) and dots (.).")
    if not (name[0].isalnum() and name[-1].isalnum()):
        _refuse_name("edges", "A bucket name begins and ends with a letter or a digit.")
    if ".." in name:
        _refuse_name("adjacent_periods", "A bucket name has no two adjacent periods.")
    if ".-" in name or "-." in name:
        _refuse_name("period_hyphen", "A bucket name has no period next to a hyphen.")
    try:
        ipaddress.IPv4Address(name)
    except ValueError:
        pass
    else:
        _refuse_name("ip_address", "A bucket name is not formatted as an IP address.")
    if name.startswith(RESERVED_PREFIXES):
        _refuse_name("reserved_prefix", f"A bucket name does not begin with {', '.join(RESERVED_PREFIXES)}.")
    if name.endswith(RESERVED_SUFFIXES):
        _refuse_name("reserved_suffix", f"A bucket name does not end with {', '.join(RESERVED_SUFFIXES)}.")
    return name


def _partition(region: str) -> str:
    if region.startswith("cn-"):
        return "aws-cn"
    if region.startswith("us-gov-"):
        return "aws-us-gov"
    return "aws"


def bucket_policy(bucket_name: str, region: str) -> dict:
    """The inline policy of a bucket's IAM user: that bucket and its objects, nothing else."""
    arn = f"arn:{_partition(region)}:s3:::{bucket_name}"
    return {"Version": "2012-10-17", "Statement": [
        {"Sid": "Bucket", "Effect": "Allow", "Action": BUCKET_ACTIONS, "Resource": arn},
        {"Sid": "Objects", "Effect": "Allow", "Action": OBJECT_ACTIONS, "Resource": f"{arn}/*"},
    ]}


# Reads ------------------------------------------------------------------------------------------

def buckets_list(*, project):
    """The project's buckets (being made or deleted ones too: their status says so)."""
    return Bucket.objects.filter(project=project)


def bucket_get(*, project, bucket_id: str) -> Bucket:
    bucket = Bucket.objects.filter(project=project, pk=bucket_id).first()
    if bucket is None:
        raise NotFound("No such bucket.")
    return bucket


def bucket_managed(*, project) -> list:
    """The managed variables the project's buckets give it:
    where the bucket is and the key that reaches only it. No sandbox endpoint: code reaches the bucket through
    the egress, as anything on the internet (a private endpoint is opened by SANDBOX_EGRESS_ALLOWED_NETWORKS)."""
    items = []
    for bucket in Bucket.objects.filter(project=project, status=Bucket.Status.READY).order_by("created_at", "pk"):
        source, prefix = f"bucket:{bucket.pk}", bucket.label
        items += [Managed("S3_ENDPOINT", bucket.endpoint, source, prefix),
                  Managed("S3_BUCKET", bucket.name, source, prefix),
                  Managed("S3_REGION", bucket.region, source, prefix),
                  Managed("AWS_ACCESS_KEY_ID", bucket.access_key_id, source, prefix),
                  Managed("AWS_SECRET_ACCESS_KEY", decrypt(bucket.secret_encrypted), source, prefix),
                  Managed("AWS_ENDPOINT_URL_S3", bucket.endpoint, source, prefix)]
    return items


# Create -----------------------------------------------------------------------------------------

@transaction.atomic
def _reserve(*, project, label: str, name: str) -> Bucket:
    Project.objects.select_for_update().filter(pk=project.pk).first()  # the count below is not raced
    if Bucket.objects.filter(project=project).count() >= settings.BUCKETS_MAX_PER_PROJECT:
        raise Conflict(f"A project has at most {settings.BUCKETS_MAX_PER_PROJECT} buckets.", code="limit_reached",
                       details={"limit": settings.BUCKETS_MAX_PER_PROJECT})
    try:
        with transaction.atomic():
            return Bucket.objects.create(project=project, label=label, name=name, region=settings.BUCKETS_S3_REGION,
                                         endpoint=settings.BUCKETS_S3_ENDPOINT, status=Bucket.Status.CREATING)
    except IntegrityError:
        raise Conflict(f"The bucket {name} exists.", code="bucket_exists", details={"name": ["Already in use."]})


def _bucket_absent(s3, name: str) -> None:
    """In us-east-1, 400 when the endpoint already has a bucket of this name: there S3 answers 200 to re-creating
    one's own bucket (one this platform left), and a new bucket must never start with another's objects.
    Elsewhere CreateBucket itself refuses a name in use (BucketAlreadyOwnedByYou, BucketAlreadyExists)."""
    from botocore.exceptions import BotoCoreError, ClientError

    if settings.BUCKETS_S3_REGION != "us-east-1":
        return
    try:
        s3.head_bucket(Bucket=name)
    except ClientError as exc:
        if _error_code(exc) in ("404", "NoSuchBucket", "NotFound"):
            return
        if _error_code(exc) not in ("403", "AccessDenied", "Forbidden"):
            raise _unreachable(exc)
    except BotoCoreError as exc:
        raise _unreachable(exc)
    raise ValidationFailed(f"S3 refused the bucket {name} (BucketAlreadyExists: a bucket of that name exists at the "
                           f"endpoint).",
                           code="bucket_name_refused", details={"name": ["Taken at the endpoint."],
                                                                "reason": "BucketAlreadyExists"})


def _bucket_make(s3, name: str) -> None:
    from botocore.exceptions import BotoCoreError, ClientError

    args = {"Bucket": name}
    if settings.BUCKETS_S3_REGION != "us-east-1":
        args["CreateBucketConfiguration"] = {"LocationConstraint": settings.BUCKETS_S3_REGION}
    try:
        s3.create_bucket(**args)
    except ClientError as exc:
        if exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 400) >= 500:
            raise _unreachable(exc)
        reason = f"{_error_code(exc)}: {_error_message(exc)}"
        raise ValidationFailed(f"S3 refused the bucket {name} ({reason}).", code="bucket_name_refused",
                               details={"name": [reason], "reason": _error_code(exc)})
    except BotoCoreError as exc:
        raise _unreachable(exc)


def _provision(bucket: Bucket) -> dict:
    """Check the name is free at the endpoint, then make the IAM user, the bucket, the user's policy and its key;
    undo what was made when a step fails."""
    from botocore.exceptions import BotoCoreError, ClientError

    iam, s3 = _iam(), _s3()
    _bucket_absent(s3, bucket.name)
    user = f"bucket-{bucket.pk}"
    try:
        iam.create_user(UserName=user, Path=settings.BUCKETS_IAM_PATH,
                        Tags=[{"Key": "platform-bucket", "Value": bucket.name}])
    except (ClientError, BotoCoreError) as exc:
        raise _iam_unavailable(exc)
    Bucket.objects.filter(pk=bucket.pk).update(iam_user=user)
    made = False
    try:
        _bucket_make(s3, bucket.name)
        made = True
        Bucket.objects.filter(pk=bucket.pk).update(made=True)
        try:
            iam.put_user_policy(UserName=user, PolicyName="bucket",
                                PolicyDocument=json.dumps(bucket_policy(bucket.name, bucket.region)))
            key = iam.create_access_key(UserName=user)["AccessKey"]
        except (ClientError, BotoCoreError) as exc:
            raise _iam_unavailable(exc)
    except Exception:
        try:
            if made:
                _bucket_remove(s3, bucket.name, force=True)
            _user_remove(iam, user)
        except Exception:  # noqa: BLE001 - the row stays `creating`; buckets_reap finishes the cleanup
            logger.exception("could not undo bucket %s", bucket.name)
            raise
        raise
    return {"access_key_id": key["AccessKeyId"], "secret_access_key": key["SecretAccessKey"]}


def bucket_create(*, project, name: str, actor=None, ip: str = "") -> tuple[Bucket, dict]:
    """A new bucket and its credentials (`access_key_id`, `secret_access_key`: shown once)."""
    _require_configured()
    label = (name or "").strip()
    full = bucket_name_for(project=project, label=label)
    bucket = _reserve(project=project, label=label, name=full)
    try:
        credentials = _provision(bucket)
    except ApplicationError:
        Bucket.objects.filter(pk=bucket.pk).delete()
        raise
    except Exception as exc:  # the endpoint failed in a way botocore does not classify
        if Bucket.objects.filter(pk=bucket.pk, iam_user="").delete()[0] == 0:
            logger.exception("bucket %s half made; buckets_reap removes it", full)
        raise _unreachable(exc)
    now = timezone.now()
    Bucket.objects.filter(pk=bucket.pk).update(status=Bucket.Status.READY,
                                               access_key_id=credentials["access_key_id"],
                                               secret_encrypted=encrypt(credentials["secret_access_key"]),
                                               measured_at=now)
    bucket.refresh_from_db()
    audit_record(workspace=project.workspace, actor=actor, action="bucket.created", target=bucket,
                 data={"name": bucket.name, "project": project.pk}, ip=ip)
    return bucket, credentials


# Delete -----------------------------------------------------------------------------------------

def _empty(s3, name: str) -> int:
    """Delete every object (every version, where versioning was on) and abort unfinished uploads; how many
    objects went."""
    from botocore.exceptions import ClientError

    deleted = 0
    try:
        for page in s3.get_paginator("list_object_versions").paginate(Bucket=name):
            batch = [{"Key": v["Key"], "VersionId": v["VersionId"]}
                     for v in [*page.get("Versions", []), *page.get("DeleteMarkers", [])]]
            for start in range(0, len(batch), 1000):
                s3.delete_objects(Bucket=name, Delete={"Objects": batch[start:start + 1000], "Quiet": True})
            deleted += len(page.get("Versions", []))
    except ClientError as exc:  # an endpoint without versions: the plain listing below does it
        if _error_code(exc) not in ("NotImplemented", "501", "InvalidRequest", "InvalidArgument"):
            raise
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=name):  # endpoints without versions
        batch = [{"Key": o["Key"]} for o in page.get("Contents", [])]
        if batch:
            s3.delete_objects(Bucket=name, Delete={"Objects": batch, "Quiet": True})
            deleted += len(batch)
    for page in s3.get_paginator("list_multipart_uploads").paginate(Bucket=name):
        for upload in page.get("Uploads", []):
            s3.abort_multipart_upload(Bucket=name, Key=upload["Key"], UploadId=upload["UploadId"])
    return deleted


def _bucket_remove(s3, name: str, *, force: bool) -> int:
    """Remove the bucket (emptied first when `force`); a bucket already gone is no error. How many objects went;
    409 when it still holds objects."""
    from botocore.exceptions import ClientError

    deleted = 0
    try:
        if force:
            deleted = _empty(s3, name)
        s3.delete_bucket(Bucket=name)
    except ClientError as exc:
        code = _error_code(exc)
        if code in ("NoSuchBucket", "404"):
            return deleted
        if code == "BucketNotEmpty":
            raise _not_empty(name)
        raise
    return deleted


def _user_remove(iam, user: str) -> None:
    """The bucket's IAM user with its keys and policy; what is already gone is no error."""
    from botocore.exceptions import ClientError

    def quietly(call, **kwargs):
        try:
            return call(**kwargs)
        except ClientError as exc:
            if _error_code(exc) != "NoSuchEntity":
                raise
            return None

    keys = quietly(iam.list_access_keys, UserName=user) or {}
    for key in keys.get("AccessKeyMetadata", []):
        quietly(iam.delete_access_key, UserName=user, AccessKeyId=key["AccessKeyId"])
    quietly(iam.delete_user_policy, UserName=user, PolicyName="bucket")
    quietly(iam.delete_user, UserName=user)


def _not_empty(name: str) -> Conflict:
    return Conflict(f"The bucket {name} holds objects: delete them first, or delete with ?force=true to delete "
                    f"them with it.", code="bucket_not_empty")


def _destroy(bucket: Bucket, *, force: bool) -> int:
    """The bucket at the endpoint (only one this platform made), then its IAM user, then the row. Idempotent: a
    second run finds less."""
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        deleted = _bucket_remove(_s3(), bucket.name, force=force) if bucket.made else 0
        if bucket.iam_user:
            _user_remove(_iam(), bucket.iam_user)
    except (ClientError, BotoCoreError) as exc:
        raise _unreachable(exc)
    Bucket.objects.filter(pk=bucket.pk).delete()
    return deleted


def bucket_delete(*, project, bucket_id: str, force: bool = False, actor=None, ip: str = "") -> int:
    """Delete a bucket: refused (409 `bucket_not_empty`) while it holds objects, unless `force`, which deletes
    them first. Its IAM user and key go with it. How many objects were deleted."""
    from botocore.exceptions import BotoCoreError, ClientError

    _require_configured()
    bucket = bucket_get(project=project, bucket_id=bucket_id)
    if bucket.status == Bucket.Status.CREATING:
        raise Conflict("The bucket is still being created.", code="bucket_busy")
    if not force:
        try:
            page = _s3().list_objects_v2(Bucket=bucket.name, MaxKeys=1)
        except ClientError as exc:
            if _error_code(exc) not in ("NoSuchBucket", "404"):
                raise _unreachable(exc)
            page = {}
        except BotoCoreError as exc:
            raise _unreachable(exc)
        if page.get("KeyCount", 0) or page.get("Contents"):
            raise _not_empty(bucket.name)
    taken = (Bucket.objects.filter(pk=bucket.pk, status__in=(Bucket.Status.READY, Bucket.Status.DELETING))
             .update(status=Bucket.Status.DELETING))
    if not taken:
        raise NotFound("No such bucket.")
    try:
        deleted = _destroy(bucket, force=force)
    except ApplicationError:  # an object arrived after the check, or the endpoint failed: ready, to try again
        Bucket.objects.filter(pk=bucket.pk).update(status=Bucket.Status.READY)
        raise
    audit_record(workspace=project.workspace, actor=actor, action="bucket.deleted", target=bucket,
                 data={"name": bucket.name, "project": project.pk, "force": force, "objectsDeleted": deleted}, ip=ip)
    return deleted


def buckets_reap(*, now=None) -> int:
    """Empty and remove the buckets whose project was deleted, whose deletion did not finish, or whose creation
    died half way; how many went. A failure is logged and retried at the next pass."""
    if not buckets_configured():
        return 0
    now = now or timezone.now()
    stale = (Q(project__isnull=True) | Q(status=Bucket.Status.DELETING)
             | Q(status=Bucket.Status.CREATING, created_at__lt=now - STALE_CREATING))
    removed = 0
    for bucket in Bucket.objects.filter(stale):
        try:
            _destroy(bucket, force=True)
            removed += 1
        except ApplicationError as exc:
            logger.warning("could not reap bucket %s: %s", bucket.name, exc.message)
    return removed


# Usage ------------------------------------------------------------------------------------------

def bucket_usage_measure(*, bucket: Bucket) -> Bucket:
    """Count the bucket's objects and bytes (list_objects_v2, every page) and keep them on the row."""
    count = size = 0
    for page in _s3().get_paginator("list_objects_v2").paginate(Bucket=bucket.name):
        for item in page.get("Contents", []):
            count += 1
            size += int(item.get("Size", 0))
    bucket.objects_count, bucket.bytes, bucket.measured_at = count, size, timezone.now()
    Bucket.objects.filter(pk=bucket.pk).update(objects_count=count, bytes=size, measured_at=bucket.measured_at)
    return bucket


def buckets_usage_refresh() -> int:
    """Measure every ready bucket (beat); how many were measured. A bucket the endpoint cannot list keeps its last
    count."""
    from botocore.exceptions import BotoCoreError, ClientError

    if not buckets_configured():
        return 0
    measured = 0
    for bucket in Bucket.objects.filter(status=Bucket.Status.READY, project__isnull=False):
        try:
            bucket_usage_measure(bucket=bucket)
            measured += 1
        except (ClientError, BotoCoreError) as exc:
            logger.warning("could not measure bucket %s: %s", bucket.name, exc)
    return measured
