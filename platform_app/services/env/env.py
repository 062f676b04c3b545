"""Environments and environment variables: the rules, the dotenv import, and resolution — the one
function that says what a build or runtime of a project sees for an environment and branch."""
import fnmatch
import hashlib
import io
import re

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from config.errors import Conflict, NotFound, ValidationFailed
from platform_app.models import Environment, EnvVar, EnvVarSlot
from platform_app.models.env import BUILTIN_ENVIRONMENTS
from platform_app.services.teams.audit import audit_record
from platform_app.services.env.crypto import decrypt, encrypt

KEY_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


# Environments -----------------------------------------------------------------------

def environments_for(project):
    """Every environment of a project; the three built-ins are created on first use."""
    existing = set(Environment.objects.filter(project=project, builtin=True).values_list("name", flat=True))
    for name in BUILTIN_ENVIRONMENTS:
        if name not in existing:
            Environment.objects.get_or_create(project=project, name=name, defaults={"builtin": True})
    return Environment.objects.filter(project=project)


def environment_names(project) -> list[str]:
    return list(environments_for(project).values_list("name", flat=True))


def environment_for_branch(project, branch: str) -> str:
    """The environment a push to `branch` deploys to: production branch, a custom pattern, else preview."""
    if branch == project.production_branch:
        return "production"
    for env in environments_for(project).filter(builtin=False).exclude(branch_pattern=""):
        if fnmatch.fnmatchcase(branch, env.branch_pattern):
            return env.name
    return "preview"


def _env_name(name: str) -> str:
    if not re.fullmatch(r"[a-z0-9][a-z0-9-]{0,62}", name or ""):
        raise ValidationFailed("name must be lowercase letters, digits and dashes.", details={"name": ["Invalid."]})
    return name


@transaction.atomic
def environment_create(*, project, name: str, branch_pattern: str = "", actor=None) -> Environment:
    environments_for(project)
    try:
        with transaction.atomic():
            return Environment.objects.create(project=project, name=_env_name(name), branch_pattern=branch_pattern)
    except IntegrityError:
        raise Conflict(f"The environment {name} exists.", code="environment_exists")


@transaction.atomic
def environment_update(*, project, environment_id: str, name: str | None, branch_pattern: str | None) -> Environment:
    env = Environment.objects.select_for_update().filter(project=project, pk=environment_id).first()
    if env is None:
        raise NotFound("No such environment.")
    if name is not None and name != env.name:
        if env.builtin:
            raise Conflict("Built-in environments cannot be renamed.", code="builtin_environment")
        old, env.name = env.name, _env_name(name)
        if Environment.objects.filter(project=project, name=env.name).exists():
            raise Conflict(f"The environment {name} exists.", code="environment_exists")
        for var in EnvVar.objects.filter(project=project):
            if old in var.targets:
                _save_var(var, targets=[env.name if t == old else t for t in var.targets])
    if branch_pattern is not None:
        env.branch_pattern = branch_pattern
    env.save()
    return env


@transaction.atomic
def environment_delete(*, project, environment_id: str) -> None:
    env = Environment.objects.filter(project=project, pk=environment_id).first()
    if env is None:
        raise NotFound("No such environment.")
    if env.builtin:
        raise Conflict("Built-in environments cannot be deleted.", code="builtin_environment")
    if EnvVarSlot.objects.filter(project=project, target=env.name).exists():
        raise Conflict("Variables still target this environment; remove it from their targets first.")
    env.delete()


# Variables ----------------------------------------------------------------------------

def validate_key(key: str) -> str:
    if not KEY_RE.match(key or ""):
        raise ValidationFailed("key must match [A-Za-z_][A-Za-z0-9_]*.", code="invalid_key", details={"key": ["Invalid."]})
    if key.upper() in settings.ENV_RESERVED_KEYS or key.upper().startswith(settings.ENV_RESERVED_PREFIXES):
        raise ValidationFailed(f"{key} is reserved by the platform.", code="reserved_key", details={"key": ["Reserved."]})
    return key


def _validate_value(value: str) -> str:
    if len(value.encode()) > settings.ENV_VALUE_MAX_BYTES:
        raise ValidationFailed("value is larger than 64 KB.", code="value_too_large", details={"value": ["Too large."]})
    return value


def _validate_type(kind: str) -> str:
    if kind not in EnvVar.Type.values:
        raise ValidationFailed("type must be plain or secret.", details={"type": ["Must be plain or secret."]})
    return kind


def _validate_targets(project, targets) -> list[str]:
    names = environment_names(project)
    if not targets:
        raise ValidationFailed("target must name at least one environment.", details={"target": ["Required."]})
    unknown = [t for t in targets if t not in names]
    if unknown:
        raise ValidationFailed(f"Unknown environment(s): {', '.join(unknown)}.", code="unknown_target",
                               details={"target": [f"Unknown: {', '.join(unknown)}"]})
    return sorted(set(targets), key=targets.index)


def _save_var(var: EnvVar, **changes) -> EnvVar:
    """Write a variable and its slots; a duplicate (key, target, branch) is a 409 and nothing is written."""
    for name, value in changes.items():
        setattr(var, name, value)
    var.updated_at = timezone.now()
    try:
        with transaction.atomic():
            var.save()
            var.slots.all().delete()
            EnvVarSlot.objects.bulk_create([EnvVarSlot(env_var=var, project=var.project, key=var.key, target=t,
                                                       branch=var.branch or "") for t in var.targets])
    except IntegrityError:
        raise Conflict(f"{var.key} already exists for one of these targets{' on ' + var.branch if var.branch else ''}.",
                       code="duplicate_env_var")
    return var


@transaction.atomic
def env_var_create(*, project, key: str, value: str, type: str, targets: list[str], branch: str | None,
                   actor=None, ip: str = "") -> EnvVar:
    var = EnvVar(project=project, key=validate_key(key), value_encrypted=encrypt(_validate_value(value)), type=_validate_type(type),
                 targets=_validate_targets(project, targets), branch=branch or None)
    _save_var(var)
    audit_record(workspace=project.workspace, actor=actor, action="env_var.created", target=var,
                 data={"key": var.key, "targets": var.targets, "branch": var.branch}, ip=ip)
    return var


@transaction.atomic
def env_var_update(*, project, env_id: str, actor=None, ip: str = "", **changes) -> EnvVar:
    var = EnvVar.objects.select_for_update().filter(project=project, pk=env_id).first()
    if var is None:
        raise NotFound("No such environment variable.")
    fields = {}
    if changes.get("key") is not None:
        fields["key"] = validate_key(changes["key"])
    if changes.get("value") is not None:
        fields["value_encrypted"] = encrypt(_validate_value(changes["value"]))
    if changes.get("type") is not None:
        fields["type"] = _validate_type(changes["type"])
    if changes.get("targets") is not None:
        fields["targets"] = _validate_targets(project, changes["targets"])
    if "branch" in changes:
        fields["branch"] = changes["branch"] or None
    _save_var(var, **fields)
    audit_record(workspace=project.workspace, actor=actor, action="env_var.updated", target=var,
                 data={"key": var.key, "fields": sorted(k for k in changes if k != "value") +
                       (["value"] if "value" in changes else [])}, ip=ip)
    return var


@transaction.atomic
def env_var_delete(*, project, env_id: str, actor=None, ip: str = "") -> None:
    var = EnvVar.objects.filter(project=project, pk=env_id).first()
    if var is None:
        raise NotFound("No such environment variable.")
    audit_record(workspace=project.workspace, actor=actor, action="env_var.deleted", target=var,
                 data={"key": var.key}, ip=ip)
    var.delete()


def env_vars_list(*, project, target: str | None = None, branch: str | None = None):
    qs = EnvVar.objects.filter(project=project)
    if target:
        qs = qs.filter(pk__in=EnvVarSlot.objects.filter(project=project, target=target).values("env_var"))
    if branch is not None:
        qs = qs.filter(branch=branch or None) if branch else qs.filter(branch__isnull=True)
    return qs


def env_reveal_audit(*, project, keys: list[str], actor, ip: str = "") -> None:
    audit_record(workspace=project.workspace, actor=actor, action="env_var.revealed", data={"keys": keys}, ip=ip)


def value_of(var: EnvVar) -> str:
    return decrypt(var.value_encrypted)


# Dotenv import --------------------------------------------------------------------------

def dotenv_parse(text: str) -> list[tuple[str, str]]:
    """python-dotenv's parser (quotes, escapes, `export`, comments, multi-line values); the first invalid
    line rejects the whole file with its number."""
    from dotenv.parser import parse_stream

    pairs = []
    for binding in parse_stream(io.StringIO(text)):
        if binding.error:
            raise ValidationFailed(f"Invalid dotenv line {binding.original.line}.", code="invalid_dotenv",
                                   details={"line": binding.original.line})
        if binding.key is None:
            continue  # blank line or comment
        if binding.value is None:
            raise ValidationFailed(f"Line {binding.original.line} has no value (KEY=value expected).",
                                   code="invalid_dotenv", details={"line": binding.original.line})
        pairs.append((binding.key, binding.value))
    return pairs


@transaction.atomic
def env_import(*, project, dotenv: str, targets: list[str], type: str, actor=None, ip: str = "") -> dict:
    """Upsert every key of a dotenv file in one transaction: a key whose general variable has exactly these
    targets is updated; any other key is created (409 for the whole import on a clash)."""
    pairs = dotenv_parse(dotenv)
    targets, type = _validate_targets(project, targets), _validate_type(type)
    for key, value in pairs:
        validate_key(key)
        _validate_value(value)
    created = updated = 0
    for key, value in pairs:
        var = next((v for v in EnvVar.objects.select_for_update().filter(project=project, key=key, branch__isnull=True)
                    if sorted(v.targets) == sorted(targets)), None)
        if var is None:
            _save_var(EnvVar(project=project, key=key, value_encrypted=encrypt(value), type=type, targets=targets))
            created += 1
        else:
            _save_var(var, value_encrypted=encrypt(value), type=type)
            updated += 1
    keys = [k for k, _ in pairs]
    audit_record(workspace=project.workspace, actor=actor, action="env_var.imported",
                 data={"keys": keys, "targets": targets}, ip=ip)
    return {"created": created, "updated": updated, "keys": keys}


# Resolution ----------------------------------------------------------------------------

def env_resolve_detailed(*, project, environment: str, branch: str | None) -> list[tuple[EnvVar, str]]:
    """(variable, source) pairs a deployment gets; a branch-specific value wins over the general one."""
    slots = EnvVarSlot.objects.filter(project=project, target=environment, branch__in=["", branch or ""])
    return slots_choose(slots.select_related("env_var"), branch)


def slots_choose(slots, branch: str | None) -> list[tuple[EnvVar, str]]:
    """The resolution rule over one (project, environment)'s slots, which may hold other branches' too."""
    chosen = {}
    for slot in sorted((s for s in slots if s.branch in ("", branch or "")), key=lambda s: s.branch):
        chosen[slot.key] = (slot.env_var, "branch" if slot.branch else "general")  # "" sorts first: branch overrides
    return [chosen[k] for k in sorted(chosen)]


def env_resolve(*, project, environment: str, branch: str | None) -> dict[str, str]:
    """The exact variables a build or runtime of `project` gets for `environment` and `branch`: the project's
    own, then the managed ones its resources set (services/resources/managed.py), which win."""
    from platform_app.services.resources.managed import managed_env

    own = {var.key: value_of(var) for var, _ in env_resolve_detailed(project=project, environment=environment,
                                                                      branch=branch)}
    return {**own, **managed_env(project=project)}


def env_snapshot(*, project, environment: str, branch: str | None) -> dict:
    """Names and a hash of the values: what a deployment records it was built with."""
    resolved = env_resolve(project=project, environment=environment, branch=branch)
    return {"names": sorted(resolved), "hash": env_hash(resolved)}


def env_hash(resolved: dict[str, str]) -> str:
    return hashlib.sha256("\n".join(f"{k}={v}" for k, v in sorted(resolved.items())).encode()).hexdigest()
