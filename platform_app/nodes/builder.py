"""A build, run by a builder: the source archive in, install and build in the sandbox, the output archive out.

The builder is handed a job (what the platform decided: the commands, the variables, the limits, the network)
and a link to the platform (`BuildLink`: over HTTP with the job's own token from a node, or in process for
the platform's tests). It never reads the platform's database, settings or files.
"""
import logging
import os
import posixpath
import selectors
import tempfile
import time
from pathlib import Path

from platform_app.sandbox import Limits, Network, SandboxUnavailable
from platform_app.sandbox.archive import Refused, pack, unpack
from platform_app.sandbox.base import WORKSPACE
from platform_app.sandbox.files import remove_tree
from platform_app.sandbox.output import CHUNK_BYTES, LineSplitter

logger = logging.getLogger("platform.builder")

# Which setting of the platform sets each limit (named in the message of a build that breaks it).
LIMIT_MESSAGES = {
    "memory": "its memory limit of {memory} MB (BUILD_MEMORY_MB)",
    "processes": "its limit of {processes} processes (BUILD_PROCESSES)",
    "cpu": "its CPU time limit of {cpu} s (BUILD_CPU_SECONDS)",
    "disk": "its disk limit of {disk} MB (BUILD_DISK_MB)",
}


class BuildFailed(Exception):
    pass


class BuildCanceled(Exception):
    pass


class BuildLink:
    """What a builder needs of the platform, for one job."""

    def fetch_source(self, job: dict, dest: Path) -> None:
        raise NotImplementedError

    def log(self, job: dict, lines: list[tuple[str, str]]) -> bool:
        """Append (stream, text) lines; True once the deployment was canceled."""
        raise NotImplementedError

    def upload(self, job: dict, archive: Path) -> None:
        raise NotImplementedError

    def finish(self, job: dict, status: str, message: str, sandbox: dict) -> None:
        raise NotImplementedError


BATCH_BYTES = 256 * 1024  # text of one log batch: well under the platform's body limit (1 MiB by default)


def log_batches(lines: list[tuple[str, str]], max_bytes: int = BATCH_BYTES) -> list[list[tuple[str, str]]]:
    """`lines` in order, in batches of at most `max_bytes` of text each (a longer line travels alone)."""
    batches, batch, size = [], [], 0
    for stream, text in lines:
        cost = len(text) + 32
        if batch and size + cost > max_bytes:
            batches.append(batch)
            batch, size = [], 0
        batch.append((stream, text))
        size += cost
    return batches + [batch] if batch or not batches else batches


class LogSender:
    """Batches a build's lines (at most every `every` seconds, `batch` lines or `batch_bytes` of text), and hears
    about a cancel or an ended deployment in the answer. Sends at least every `heartbeat` seconds, which keeps
    the build's lease alive and tells a silent build that its deployment ended."""

    def __init__(self, link: BuildLink, job: dict, *, every: float = 0.1, batch: int = 200, heartbeat: float = 3.0,
                 batch_bytes: int = BATCH_BYTES):
        self.link, self.job, self.every, self.batch, self.heartbeat = link, job, every, batch, heartbeat
        self.batch_bytes = batch_bytes
        self.lines: list[tuple[str, str]] = []
        self.size = 0
        self.sent_at, self.canceled = time.monotonic(), False

    def line(self, text: str, stream: str = "build") -> None:
        self.lines.append((stream, text.replace("\0", "\ufffd")))
        self.size += len(text)
        self.tick()

    def system(self, text: str) -> None:
        self.lines.append(("system", text))
        self.flush()

    def tick(self) -> None:
        waited = time.monotonic() - self.sent_at
        if (len(self.lines) >= self.batch or self.size >= self.batch_bytes or (self.lines and waited >= self.every)
                or waited >= self.heartbeat):
            self.flush()

    def flush(self) -> None:
        lines, self.lines, self.size = self.lines, [], 0
        self.canceled = self.link.log(self.job, lines) or self.canceled
        self.sent_at = time.monotonic()


def build_env(job: dict) -> dict:
    """The variables of every step: a plain PATH, HOME, LANG, CI, where Python and Node put what they install,
    then the project's own (which may override them)."""
    root = posixpath.normpath(f"{WORKSPACE}/{job['root']}")
    env = {"PATH": f"{root}/.python_packages/bin:{root}/node_modules/.bin:/usr/local/bin:/usr/bin:/bin",
           "LANG": "C.UTF-8", "CI": "1", "PYTHONUNBUFFERED": "1"}
    if job.get("runtime") == "python":
        # Packages go beside the app (the system's Python is read-only) and travel with its output.
        env.update(PIP_TARGET=f"{root}/.python_packages", PYTHONPATH=f"{root}/.python_packages",
                   PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_WARN_SCRIPT_LOCATION="1")
    env.update({key: value for key, value in job["env"]})
    return env


class Builder:
    """Runs jobs with one runner, in scratch folders under `work_root` (each removed after its build)."""

    def __init__(self, runner, *, work_root: Path):
        self.runner, self.work_root = runner, Path(work_root)

    def run_job(self, job: dict, link: BuildLink) -> str:
        """The whole build; returns the status it reported (`ready`, `error`, `canceled`)."""
        self.work_root.mkdir(parents=True, exist_ok=True)
        scratch = Path(tempfile.mkdtemp(prefix=f"{job['id']}-", dir=self.work_root))
        scratch.chmod(0o711)  # the sandbox's own user must be able to walk to its folders
        log = LogSender(link, job)
        limits = Limits.from_wire(job["limits"])
        report = self.runner.enforced(limits)
        try:
            if self.runner.name == "none":
                log.system(f"Warning: {report['warning']}")
            else:
                log.system(f"Building in a sandbox ({self.runner.name}): {self._describe(report)}.")
            status = self._build(job, link, log, scratch, limits, report)
        except BuildCanceled:
            log.system("Build canceled.")
            status, message = "canceled", ""
            link.finish(job, status, message, report)
        except BuildFailed as exc:
            status = "error"
            link.finish(job, status, str(exc), report)
        except SandboxUnavailable as exc:
            status = "error"
            link.finish(job, status, f"The builder could not start its sandbox: {exc}", report)
        finally:
            try:
                log.flush()
            except Exception:  # noqa: BLE001 - the job already ended; a lost last line is not worth more
                pass
            remove_tree(scratch)
        return status

    @staticmethod
    def _describe(report: dict) -> str:
        limits = ", ".join(f"{name} by {how}" for name, how in report["limits"].items() if how)
        isolation = ", ".join(name for name, kept in report["isolation"].items() if kept)
        return f"{isolation} isolated; limits: {limits}"

    def _build(self, job, link, log, scratch, limits, report) -> str:
        source = scratch / "source.tar.gz"
        link.fetch_source(job, source)
        caps = job["artifact"]
        try:
            with open(source, "rb") as stream:
                skipped = unpack(stream, scratch / "src", max_bytes=caps["bytes"], max_files=caps["files"],
                                 skip_bad_links=True)
        except Refused as exc:
            raise BuildFailed(f"The source could not be unpacked: {exc}")
        source.unlink()
        for path in skipped:
            log.system(f"Skipped the link {path}: it points outside the repository.")
        src = scratch / "src"
        if (src / job["root"]).is_symlink() or not (src / job["root"]).is_dir():
            raise BuildFailed(f"The root directory {job['root']!r} does not exist in the repository.")
        env = build_env(job)
        network = Network.from_wire(job["egress"])
        deadline = time.monotonic() + job["time"]
        started = time.monotonic()
        for command in job["commands"]:
            self._step(job, command, src=src, scratch=scratch / "run", env=env, limits=limits, network=network,
                       deadline=deadline, log=log)
        output = os.path.normpath(os.path.join(job["root"], job["output"]))
        archive = scratch / "artifact.tar.gz"
        try:
            with open(archive, "wb") as out:
                counted = pack(src, output, out, max_bytes=caps["bytes"], max_files=caps["files"])
        except Refused as exc:
            if exc.path == output:
                raise BuildFailed(f"The output directory {job['output']!r} was not produced by the build.")
            raise BuildFailed(f"The output was refused: {exc.path}: {exc.reason}.")
        log.system(f"Output: {counted['files']} files, {counted['bytes']} bytes.")
        link.upload(job, archive)
        report = {**report, "seconds": round(time.monotonic() - started, 3)}
        link.finish(job, "ready", "", report)
        return "ready"

    def _step(self, job, command, *, src, scratch, env, limits, network, deadline, log) -> None:
        log.system(f"$ {command}")
        proc = self.runner.run(command, workdir=src, cwd=job["root"], scratch=scratch, env=env, limits=limits,
                               network=network, label=job.get("label") or "build")
        selector = selectors.DefaultSelector()
        selector.register(proc.stdout, selectors.EVENT_READ)
        splitter, tail, code = LineSplitter(), [], None
        try:
            while True:
                if time.monotonic() > deadline:
                    raise BuildFailed(f"The build exceeded its time limit of {job['timeout']}s "
                                      "(BUILD_TIMEOUT_SECONDS).")
                if log.canceled:
                    raise BuildCanceled()
                broke = proc.exceeded()
                if broke:
                    raise BuildFailed(self._over(broke, limits))
                if selector.select(timeout=0.25):
                    chunk = os.read(proc.stdout.fileno(), CHUNK_BYTES)
                    if not chunk:
                        break
                    lines = splitter.feed(chunk)
                    for text in lines:
                        log.line(text)
                    tail = (tail + lines[-5:])[-5:]
                log.tick()
            last = splitter.end()
            if last is not None:
                log.line(last)
            code = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
            broke = proc.exceeded()
            if broke:
                raise BuildFailed(self._over(broke, limits))
        finally:
            selector.close()
            proc.close()  # every process the step started ends with it
        log.flush()
        if log.canceled:
            raise BuildCanceled()
        if code != 0:
            raise BuildFailed(f"`{command}` exited with {code}: " + " | ".join(tail)[-500:])

    @staticmethod
    def _over(limit: str, limits: Limits) -> str:
        return "The build went over " + LIMIT_MESSAGES[limit].format(**limits.to_wire()) + "."
