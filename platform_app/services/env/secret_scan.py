"""Committed-secret scanner, with rules modelled on established scanners (gitleaks, trufflehog).

Findings keep the file, line, rule and a redacted preview — never the secret. A fingerprint (rule, file,
secret hash) deduplicates across builds; an ignored finding stays ignored on the next scan.
"""
import hashlib
import math
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from config.errors import ApplicationError, NotFound, ValidationFailed
from platform_app.models import SecretFinding

# name, pattern (group "secret" is the value), extra check
RULES = [
    ("aws-access-key-id", re.compile(r"\b(?P<secret>(?:AKIA|ASIA)[0-9A-Z]{16})\b")),
    ("aws-secret-access-key", re.compile(
        r"(?i)aws_?secret_?access_?key\s*[:=]\s*['\"]?(?P<secret>[A-Za-z0-9/+=]{40})\b")),
    ("private-key", re.compile(r"(?P<secret>-----BEGIN (?:RSA |EC |DSA |OPENSSH |PGP |ENCRYPTED )?PRIVATE KEY-----)")),
    ("github-token", re.compile(r"\b(?P<secret>gh[pousr]_[A-Za-z0-9]{36,255})\b")),
    ("gitlab-token", re.compile(r"\b(?P<secret>glpat-[A-Za-z0-9_\-]{20,})\b")),
    ("slack-token", re.compile(r"\b(?P<secret>xox[baprs]-[A-Za-z0-9-]{10,})\b")),
    ("stripe-secret-key", re.compile(r"\b(?P<secret>(?:sk|rk)_live_[A-Za-z0-9]{24,})\b")),
    ("google-api-key", re.compile(r"\b(?P<secret>AIza[0-9A-Za-z_\-]{35})\b")),
    ("platform-token", re.compile(r"\b(?P<secret>svc_(?:live_|test_)?[A-Za-z0-9_\-]{30,})\b")),
]
DOTENV_ASSIGNMENT = re.compile(r"^\s*(?:export\s+)?(?P<key>[A-Za-z_][A-Za-z0-9_]*)\s*=\s*['\"]?(?P<secret>[^'\"\s#]+)")
SECRET_NAME = re.compile(r"(?i)(secret|token|password|passwd|api_?key|private|credential|auth)")
PLACEHOLDER = re.compile(r"(?i)(example|changeme|change_me|placeholder|your[_-]|xxxx|dummy|sample|test|\$\{|<)")
SKIP_DIRS = {".git", "node_modules", ".venv", "venv", "__pycache__", "dist", "build", ".next"}
MAX_FILE_BYTES = 1_000_000


def entropy(value: str) -> float:
    counts = {c: value.count(c) for c in set(value)}
    return -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())


def redact(secret: str) -> str:
    if len(secret) <= 8:
        return "*" * len(secret)
    return f"{secret[:4]}{'*' * min(len(secret) - 6, 16)}{secret[-2:]}"


@dataclass
class Hit:
    rule: str
    file: str
    line: int
    secret: str


def scan_text(text: str, file: str) -> list[Hit]:
    hits = []
    is_dotenv = Path(file).name.startswith(".env") or file.endswith(".env")
    for number, line in enumerate(text.splitlines(), 1):
        for rule, pattern in RULES:
            for match in pattern.finditer(line):
                secret = match.group("secret")
                if not PLACEHOLDER.search(secret) or rule == "private-key":
                    hits.append(Hit(rule, file, number, secret))
        if is_dotenv:
            match = DOTENV_ASSIGNMENT.match(line)
            if match and SECRET_NAME.search(match.group("key")):
                secret = match.group("secret")
                if (len(secret) >= 16 and entropy(secret) >= 3.5 and not PLACEHOLDER.search(secret)
                        and not any(h.line == number for h in hits)):
                    hits.append(Hit("high-entropy-dotenv", file, number, secret))
    return hits


def scan_tree(root: Path) -> list[Hit]:
    hits = []
    for path in sorted(root.rglob("*")):
        if not path.is_file() or any(part in SKIP_DIRS for part in path.relative_to(root).parts):
            continue
        if path.stat().st_size > MAX_FILE_BYTES:
            continue
        data = path.read_bytes()
        if b"\0" in data[:8192]:
            continue  # binary
        hits.extend(scan_text(data.decode("utf-8", errors="replace"), str(path.relative_to(root))))
    return hits


def _fingerprint(project_id: str, hit: Hit) -> str:
    return hashlib.sha256(f"{project_id}:{hit.rule}:{hit.file}:{hit.secret}".encode()).hexdigest()


@transaction.atomic
def secret_scan_run(*, project, deployment=None, repo_dir: Path, commit_sha: str = "",
                    log_lines: list[str] | None = None) -> int:
    """Scan a checked-out repository (and a build log); returns the number of new findings."""
    hits = scan_tree(Path(repo_dir))
    if log_lines:
        hits.extend(scan_text("\n".join(log_lines), "(build log)"))
    new, now = 0, timezone.now()
    for hit in hits:
        finding, created = SecretFinding.objects.get_or_create(
            project=project, fingerprint=_fingerprint(project.pk, hit),
            defaults=dict(rule=hit.rule, file=hit.file, line=hit.line, preview=redact(hit.secret),
                          commit_sha=commit_sha, deployment_id=getattr(deployment, "pk", "") or ""))
        if created:
            new += 1
        elif finding.ignored_at is None:
            SecretFinding.objects.filter(pk=finding.pk).update(last_seen_at=now, line=hit.line,
                                                               commit_sha=commit_sha or finding.commit_sha)
    return new


def finding_get(*, project, finding_id: str) -> SecretFinding:
    finding = SecretFinding.objects.filter(project=project, pk=finding_id).first()
    if finding is None:
        raise NotFound("No such finding.")
    return finding


def finding_ignore(*, project, finding_id: str, actor=None) -> SecretFinding:
    finding = finding_get(project=project, finding_id=finding_id)
    finding.ignored_at = finding.ignored_at or timezone.now()
    finding.save(update_fields=["ignored_at"])
    return finding


def _secret_at_commit(project, finding: SecretFinding) -> str:
    """Re-read the line at the finding's commit from the project's repository and extract the secret."""
    from platform_app.services.providers.git_cli import GitCommandFailed, git_clone, run_git
    from platform_app.services.providers.git_urls import git_remote_for_project

    if not (project.git_url or project.git_provider) or not finding.commit_sha or finding.file == "(build log)":
        raise ValidationFailed("This finding cannot be imported: its repository content is not reachable.",
                               code="not_importable")
    with tempfile.TemporaryDirectory(prefix="finding-") as tmp:
        try:
            # the same checks as a build: hosted path inside the workspace's folder, or the outbound guard
            git_clone(git_remote_for_project(project), branch=None, dest=Path(tmp) / "repo",
                      timeout=settings.GIT_TIMEOUT_SECONDS, depth=None, checkout=False)
            blob = run_git(["show", f"{finding.commit_sha}:{finding.file}"], cwd=Path(tmp) / "repo", timeout=30)
        except (ApplicationError, GitCommandFailed, UnicodeDecodeError):
            raise ValidationFailed("The repository content at this commit could not be read.", code="not_importable")
    for hit in scan_text(blob, finding.file):
        if _fingerprint(project.pk, hit) == finding.fingerprint:
            return hit.secret
    raise ValidationFailed("The secret is no longer at that place in the repository.", code="not_importable")


ALL_BUILT_IN_TARGETS = ["production", "preview", "development"]


@transaction.atomic
def finding_import(*, project, finding_id: str, key: str, targets: list[str] | None = None, actor=None,
                   ip: str = ""):
    """Move a finding's value into a secret env var (read from the repository at that commit); with no
    `targets`, into every built-in environment."""
    from platform_app.services.env.env import env_var_create

    finding = SecretFinding.objects.select_for_update().filter(project=project, pk=finding_id).first()
    if finding is None:
        raise NotFound("No such finding.")
    var = env_var_create(project=project, key=key, value=_secret_at_commit(project, finding), type="secret",
                         targets=targets or ALL_BUILT_IN_TARGETS, branch=None, actor=actor, ip=ip)
    finding.imported_at, finding.imported_as = timezone.now(), var.key
    finding.save(update_fields=["imported_at", "imported_as"])
    return finding, var
