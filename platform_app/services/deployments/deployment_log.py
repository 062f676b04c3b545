"""A deployment's events and log lines: every writer (the build, agents, the deployment services) records them
here, and followers of the log stream are woken from here. It imports no other service, so anything may use it."""
from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Max

from platform_app.models import Deployment, DeploymentEvent, LogLine
from platform_app.sandbox.output import LINE_BYTES

LINE_CHARS = LINE_BYTES + 64  # a builder's cut line with its ` …[cut: N bytes]`


def event_record(deployment, type_: str, message: str = "") -> DeploymentEvent:
    return DeploymentEvent.objects.create(deployment=deployment, type=type_, message=message[:2000])


def _next_seqs(deployment, write, attempts: int = 20):
    """`write(first free sequence number)`, again with the next number when another writer took it first (the
    worker preparing a build, the builder running it and the claim all write to one log): the unique constraint
    keeps the order honest, this keeps the writers from failing on it."""
    for attempt in range(attempts):
        last = LogLine.objects.filter(deployment=deployment).aggregate(m=Max("seq"))["m"]
        if last is None:  # no rows: a new log, or one archived already (a late line numbers on after it)
            last = Deployment.objects.filter(pk=deployment.pk).values_list("log_lines_archived", flat=True).first() or 0
        try:
            with transaction.atomic():
                return write(last + 1)
        except IntegrityError:
            if attempt == attempts - 1:
                raise


def log_append(deployment, text: str, stream: str = "build") -> LogLine:
    """Append one line with the next sequence number."""
    line = _next_seqs(deployment, lambda seq: LogLine.objects.create(deployment=deployment, seq=seq, stream=stream,
                                                                      text=text[:LINE_CHARS]))
    log_publish(line)
    return line


def log_extend(deployment, lines: list[tuple[str, str]]) -> int:
    """Append (stream, text) lines in one write (a builder's batch); how many."""
    if not lines:
        return 0
    rows = _next_seqs(deployment, lambda first: LogLine.objects.bulk_create([
        LogLine(deployment=deployment, seq=first + i, stream=stream if stream in ("build", "system") else "build",
                text=text[:LINE_CHARS]) for i, (stream, text) in enumerate(lines)]))
    log_publish(rows[-1])
    return len(rows)


def log_channel(deployment_id: str) -> str:
    return f"deployment-logs:{deployment_id}"


def log_publish(line) -> None:
    """Wake stream followers at once through Redis pub/sub when Redis is configured (they poll otherwise)."""
    if not settings.REDIS_URL:
        return
    try:
        _redis().publish(log_channel(line.deployment_id), str(line.seq))
    except Exception:  # noqa: BLE001 - a missed wake-up only delays followers until their next poll
        pass


_client = None


def _redis():
    global _client
    if _client is None:
        import redis

        _client = redis.Redis.from_url(settings.REDIS_URL)
    return _client
