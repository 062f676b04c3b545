"""Graduation, reading a bundle before anything is made (docs/graduation.md).

A bundle may come from anywhere (anyone can sign one with a code of their own), so each of its parts is what a
client would post to the API that makes it, and is checked by that API's own input serializer; the services then
check their rules (and the workspace's plan) as the parts are made. A part either refuses is a refusal of the
whole bundle, naming the part and the field: `refusal()`.
"""
import base64
import binascii
import hashlib
import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime

from djangorestframework_camel_case.util import underscoreize
from rest_framework import exceptions as drf

from config.errors import ApplicationError, classify
from config.inputs import validated
from config.parsers import CamelCaseJSONParser
from platform_app.models import Project
from platform_app.services.projects.projects import FRAMEWORKS, IMAGE_REF, root_directory_check
from platform_app.services.providers.git_urls import is_local_url
from platform_app.services.resources.graduation_bundle import BundleInvalid, Seal
from platform_app.services.resources.graduation_export import SETTINGS

PROVIDERS = ("git-a", "git-b", "git-c")
PROVIDER_REPO = re.compile(r"^[A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)+$")
BRANCH = re.compile(r"^[^\x00-\x20~^:?*\[\\]+$")


# The project -----------------------------------------------------------------------------------

def text(data: dict, key: str, limit: int, *, default: str = "") -> str:
    value = data.get(key, default)
    if value is None:
        value = default
    if not isinstance(value, str) or len(value) > limit or "\x00" in value:
        raise BundleInvalid(f"The bundle's `{key}` is not valid.")
    return value


def moment(value) -> datetime:
    try:
        parsed = datetime.fromisoformat(value)
    except (TypeError, ValueError):
        raise BundleInvalid("The bundle's `expiresAt` is not valid.")
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def project_fields(payload: dict, seal: Seal) -> dict:
    """The new project's columns from the bundle, each checked as the projects service checks a user's."""
    p = payload.get("project")
    git = payload.get("git")
    if not isinstance(p, dict) or not isinstance(git, dict):
        raise BundleInvalid("The bundle names no project.")
    name = text(p, "name", 100).strip() or "Graduated project"
    fields = {"name": name, "production_branch": text(p, "productionBranch", 200, default="main") or "main",
              "auto_deploy": p.get("autoDeploy") is not False}
    if not BRANCH.match(fields["production_branch"]) or fields["production_branch"].startswith("-"):
        raise BundleInvalid("The bundle's production branch is not a branch name.")
    for column, wire, limit in SETTINGS:
        fields[column] = text(p, wire, limit)
    if fields["framework"] not in FRAMEWORKS:
        raise BundleInvalid(f"The bundle's framework `{fields['framework']}` is unknown here.")
    fields["root_directory"] = root_directory_check(fields["root_directory"])
    kind = git.get("kind")
    if kind == "image":
        image_ref = text(git, "imageRef", 300)
        if not IMAGE_REF.match(image_ref):
            raise BundleInvalid("The bundle's image reference is not valid.")
        fields.update(source=Project.Source.IMAGE, image_ref=image_ref)
    elif kind == "provider":
        provider, repo = text(git, "provider", 16), text(git, "repo", 200)
        if provider not in PROVIDERS or not PROVIDER_REPO.match(repo):
            raise BundleInvalid("The bundle's provider repository is not valid.")
        fields.update(source=Project.Source.GIT, git_provider=provider, git_repo=repo)
    elif kind == "url":
        url = seal.open(git["urlSealed"]) if git.get("urlSealed") else text(git, "url", 500)
        if len(url) > 500 or is_local_url(url) or not url.lower().startswith(("https://", "http://")):
            raise BundleInvalid("The bundle's Git URL is not an http(s) URL.")
        fields.update(source=Project.Source.GIT, git_url=url)  # the outbound guard checks it at every build
    elif kind == "hosted":
        template = text(p, "template", 64)
        fields.update(source=Project.Source.TEMPLATE if template else Project.Source.GIT, template=template)
    elif kind != "none":
        raise BundleInvalid("The bundle's Git source is not one this platform knows.")
    return fields


def repository_data(payload: dict) -> bytes:
    """The git bundle of a hosted source, checked against its digest."""
    repository = payload.get("repository")
    if not isinstance(repository, dict) or not isinstance(repository.get("gitBundle"), str):
        raise BundleInvalid("The bundle carries no repository for its hosted Git source.")
    try:
        data = base64.b64decode(repository["gitBundle"], validate=True)
    except (binascii.Error, ValueError):
        raise BundleInvalid("The bundle's repository is not valid.")
    if hashlib.sha256(data).hexdigest() != repository.get("sha256"):
        raise BundleInvalid("The bundle's repository does not match its digest.")
    return data


# The parts ---------------------------------------------------------------------------------------

@dataclass
class Part:
    """One item of a bundle's list, as its API's input serializer left it."""

    resource: str  # the bundle's key: envVars, components...
    index: int
    name: str  # what the answers call it (never a secret)
    data: dict
    extra: dict = field(default_factory=dict)  # what the bundle carries beside the API's body (a domain's primary)


def refusal(part: Part, exc: ApplicationError) -> ApplicationError:
    """A part's refusal as the whole bundle's: a 400 becomes `bundle_invalid` with the fields; another status
    (402 `plan_limit`) keeps its code; both name the part in `details`."""
    where = {"resource": part.resource, "index": part.index, "name": part.name}
    message = f"{part.resource}[{part.index}] ({part.name}): {exc.message}"
    if exc.status == 400:
        return BundleInvalid(message, details={**where, "fields": exc.details or {}})
    return ApplicationError(message, code=exc.code, status=exc.status, details={**(exc.details or {}), **where})


def _sealed_json(seal: Seal, token):
    try:
        return json.loads(seal.open(token))
    except ValueError:
        raise BundleInvalid()


def _env_var(item: dict, seal: Seal) -> dict:
    if "targets" in item and "target" not in item:  # the name bundles used before they took the API's
        item["target"] = item.pop("targets")
    return {**item, "value": seal.open(item.get("value"))}  # not a refusal: a value the code cannot open is forged


def _log_drain(item: dict, seal: Seal) -> dict:
    return {**{k: v for k, v in item.items() if k != "url_sealed"}, "url": seal.open(item.get("url_sealed"))}


def _alert_rule(item: dict, seal: Seal) -> dict:
    return {**{k: v for k, v in item.items() if k != "channels_sealed"},
            "channels": _sealed_json(seal, item.get("channels_sealed"))}


def _same(item: dict, seal: Seal) -> dict:
    return item


# Each part, in the order they are made: how the bundle's item becomes its API's request body, and which field
# names it (None: a drain, named by its host, as its address may carry a token).
PARTS = {"environments": (_same, "name"), "envVars": (_env_var, "key"), "domains": (_same, "name"),
         "cronJobs": (_same, "path"), "logDrains": (_log_drain, None), "alertRules": (_alert_rule, "name"),
         "components": (_same, "name")}


def _name(item: dict, key: str | None) -> str:
    if key is None:
        from urllib.parse import urlsplit

        try:
            return urlsplit(str(item.get("url") or "")).hostname or "?"
        except ValueError:
            return "?"
    return str(item.get(key))[:256]


def bundle_parts(payload: dict, seal: Seal, *, inputs: dict) -> dict[str, list[Part]]:
    """Every part of the bundle checked by its API's input serializer (`inputs`, by the bundle's key: the API
    layer hands them in, as imports point from the API to the services), in the order they are made; the first
    refused refuses the bundle."""
    parts = {}
    for resource, (body, key) in PARTS.items():
        serializer = inputs[resource]
        items = payload.get(resource) or []
        if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
            raise BundleInvalid(f"The bundle's `{resource}` is not valid.")
        parts[resource] = []
        for index, raw in enumerate(items):
            item = body(underscoreize(raw, **CamelCaseJSONParser.json_underscoreize), seal)
            extra = {"primary": item.pop("primary") is True} if resource == "domains" and "primary" in item else {}
            part = Part(resource, index, _name(item, key), {}, extra)
            try:
                part.data = validated(serializer, item)
            except drf.ValidationError as exc:
                raise refusal(part, classify(exc))
            parts[resource].append(part)
    return parts
