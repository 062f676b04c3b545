"""A project's firewall: rules checked by the edge before it serves anything, and the events they leave.

Rules are tried by ascending priority (then age); the first whose conditions ALL match decides:
`allow` serves at once (later rules are skipped), `deny` answers 403, `challenge` answers an interstitial page
until the visitor passed it (a signed cookie bound to project and address), `rate_limit` counts requests per
client address in fixed windows (config.ratelimit) and answers 429 past `requests` per `windowSeconds`.
A rule without conditions matches every request. No matching rule: the request is served. Path conditions
see the edge's normalised path and, for a static deployment, the names of the file it serves (paths.py), so
another spelling of a path meets the same rules.

The edge never queries rules per request: `rules_compiled` runs when a host's site is (re)built, and every
change to a rule invalidates the hosts cache (the model signals of hostcache), so the next request rebuilds it.
"""
import fnmatch
import ipaddress
import re
import time
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.core import signing
from django.db import transaction
from django.http import HttpResponse, HttpResponseRedirect
from django.utils import timezone
from django.utils.html import escape
from django.utils.http import url_has_allowed_host_and_scheme

from config import ratelimit
from config.client_ip import client_ip, ip_normalize
from config.errors import NotFound, ValidationFailed
from platform_app.models import FirewallEvent, FirewallRule

FIELDS = ("ip", "path", "method", "header", "user_agent")
OPS = ("eq", "prefix", "glob", "cidr", "contains")
# which operators make sense for which field
FIELD_OPS = {"ip": ("eq", "cidr"), "path": ("eq", "prefix", "glob", "contains"), "method": ("eq",),
             "header": ("eq", "prefix", "glob", "contains"), "user_agent": ("eq", "prefix", "glob", "contains")}
HEADER_NAME = re.compile(r"^[A-Za-z0-9-]{1,100}$")
MAX_VALUE = 512
CHALLENGE_PATH = "/.well-known/svc-challenge"
CHALLENGE_SALT = "edge-firewall-challenge"


# Validation -------------------------------------------------------------------------------------------

def _condition_clean(index: int, raw) -> dict:
    where = f"conditions[{index}]"
    if not isinstance(raw, dict):
        raise ValidationFailed("Each condition is an object.", details={where: ["Must be an object."]})
    unknown = sorted(set(raw) - {"field", "op", "value", "name"})
    if unknown:
        raise ValidationFailed(f"Unknown condition field: {', '.join(unknown)}.",
                               details={f"{where}.{k}": ["Unknown field."] for k in unknown})
    field, op, value = raw.get("field"), raw.get("op"), raw.get("value")
    if field not in FIELDS:
        raise ValidationFailed(f"Unknown condition field {field!r}.",
                               details={f"{where}.field": [f"Must be one of {', '.join(FIELDS)}."]})
    if op not in OPS:
        raise ValidationFailed(f"Unknown condition operator {op!r}.",
                               details={f"{where}.op": [f"Must be one of {', '.join(OPS)}."]})
    if op not in FIELD_OPS[field]:
        raise ValidationFailed(f"`{op}` does not apply to `{field}`.",
                               details={f"{where}.op": [f"For {field}: one of {', '.join(FIELD_OPS[field])}."]})
    if not isinstance(value, str) or not value or len(value) > MAX_VALUE:
        raise ValidationFailed("A condition's value is a non-empty string.",
                               details={f"{where}.value": [f"A string of 1 to {MAX_VALUE} characters."]})
    clean = {"field": field, "op": op, "value": value}
    if field == "header":
        name = raw.get("name")
        if not isinstance(name, str) or not HEADER_NAME.match(name):
            raise ValidationFailed("A header condition names its header.",
                                   details={f"{where}.name": ["A header name (letters, digits, dashes)."]})
        clean["name"] = name.lower()
    elif raw.get("name") is not None:
        raise ValidationFailed("`name` is only for header conditions.", details={f"{where}.name": ["Not allowed."]})
    if field == "ip":
        try:
            if op == "cidr":
                clean["value"] = str(ipaddress.ip_network(value, strict=False))
            else:  # canonical, as the client address is written (IPv4-mapped IPv6 as IPv4)
                clean["value"] = ip_normalize(value)
                if clean["value"] is None:
                    raise ValueError(value)
        except ValueError:
            kind = "CIDR block (203.0.113.0/24, 2001:db8::/32)" if op == "cidr" else "IPv4 or IPv6 address"
            raise ValidationFailed(f"{value!r} is not a valid {kind.split(' (')[0]}.",
                                   details={f"{where}.value": [f"Must be a {kind}."]}) from None
    elif field == "method":
        if not re.fullmatch(r"[A-Za-z]{1,16}", value):
            raise ValidationFailed("A method is a word such as GET.", details={f"{where}.value": ["Invalid method."]})
        clean["value"] = value.upper()
    elif op == "glob":
        if "[" in value and not re.search(r"\[[^\]]+\]", value):
            raise ValidationFailed(f"{value!r} is not a valid pattern (unclosed [).",
                                   details={f"{where}.value": ["Invalid glob pattern: unclosed '['."]})
        try:
            re.compile(fnmatch.translate(value))
        except re.error as exc:
            raise ValidationFailed(f"{value!r} is not a valid pattern.",
                                   details={f"{where}.value": [f"Invalid glob pattern: {exc}."]}) from None
    if field in ("path",) and op in ("eq", "prefix", "glob") and not value.startswith(("/", "*", "?", "[")):
        raise ValidationFailed("A path starts with /.", details={f"{where}.value": ["Must start with /."]})
    return clean


def _rule_clean(*, action: str, conditions, rate_limit) -> tuple[list[dict], int | None, int | None]:
    if not isinstance(conditions, list):
        raise ValidationFailed("conditions is a list.", details={"conditions": ["Must be a list."]})
    if len(conditions) > settings.FIREWALL_MAX_CONDITIONS:
        raise ValidationFailed(f"At most {settings.FIREWALL_MAX_CONDITIONS} conditions per rule.",
                               details={"conditions": [f"At most {settings.FIREWALL_MAX_CONDITIONS}."]})
    clean = [_condition_clean(i, c) for i, c in enumerate(conditions)]
    if action == FirewallRule.Action.RATE_LIMIT:
        if not rate_limit:
            raise ValidationFailed("A rate_limit rule needs rateLimit {requests, windowSeconds}.",
                                   details={"rateLimit": ["Required for action rate_limit."]})
        return clean, rate_limit["requests"], rate_limit["window_seconds"]
    if rate_limit:
        raise ValidationFailed("rateLimit is only for action rate_limit.", details={"rateLimit": ["Not allowed."]})
    return clean, None, None


# Rules ------------------------------------------------------------------------------------------------

def firewall_rules_list(*, project):
    return FirewallRule.objects.filter(project=project).order_by("priority", "created_at")


def _rule_get(project, rule_id: str) -> FirewallRule:
    rule = FirewallRule.objects.select_for_update().filter(project=project, pk=rule_id).first()
    if rule is None:
        raise NotFound("No such firewall rule.")
    return rule


@transaction.atomic
def firewall_rule_create(*, project, name: str, action: str, conditions: list, priority: int = 100,
                         enabled: bool = True, rate_limit: dict | None = None) -> FirewallRule:
    if action not in FirewallRule.Action.values:
        raise ValidationFailed("Unknown action.", details={"action": [f"One of {', '.join(FirewallRule.Action.values)}."]})
    clean, requests, window = _rule_clean(action=action, conditions=conditions, rate_limit=rate_limit)
    if FirewallRule.objects.filter(project=project).count() >= settings.FIREWALL_MAX_RULES:
        raise ValidationFailed(f"A project has at most {settings.FIREWALL_MAX_RULES} firewall rules.",
                               code="too_many_rules")
    rule = FirewallRule.objects.create(project=project, name=name, action=action, conditions=clean,
                                       priority=priority, enabled=enabled, rate_limit_requests=requests,
                                       rate_limit_window_seconds=window)
    return rule


@transaction.atomic
def firewall_rule_update(*, project, rule_id: str, **changes) -> FirewallRule:
    rule = _rule_get(project, rule_id)
    for field in ("name", "priority", "enabled"):
        if field in changes:
            setattr(rule, field, changes[field])
    if {"action", "conditions", "rate_limit"} & set(changes):
        action = changes.get("action", rule.action)
        if action not in FirewallRule.Action.values:
            raise ValidationFailed("Unknown action.", details={"action": ["Invalid."]})
        rate_limit = changes.get("rate_limit", None if "action" in changes else (
            {"requests": rule.rate_limit_requests, "window_seconds": rule.rate_limit_window_seconds}
            if rule.rate_limit_requests else None))
        clean, requests, window = _rule_clean(action=action, conditions=changes.get("conditions", rule.conditions),
                                              rate_limit=rate_limit)
        rule.action, rule.conditions = action, clean
        rule.rate_limit_requests, rule.rate_limit_window_seconds = requests, window
    rule.updated_at = timezone.now()
    rule.save()
    return rule


@transaction.atomic
def firewall_rule_delete(*, project, rule_id: str) -> None:
    _rule_get(project, rule_id).delete()


# Matching ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Compiled:
    id: str
    action: str
    tests: tuple  # (getter, predicate) pairs
    requests: int | None
    window: int | None


def _getter(condition: dict):
    """`(request, ip, paths) -> value`; for `path`, the tuple of names the request's path goes by (see
    `firewall_enforce`), which `_predicate` tries one by one."""
    field = condition["field"]
    if field == "ip":
        return lambda request, ip, paths: ip
    if field == "path":
        return lambda request, ip, paths: paths
    if field == "method":
        return lambda request, ip, paths: request.method
    if field == "user_agent":
        return lambda request, ip, paths: _header_values(request.META.get("HTTP_USER_AGENT", ""))
    meta = "HTTP_" + condition["name"].upper().replace("-", "_")
    if meta in ("HTTP_CONTENT_TYPE", "HTTP_CONTENT_LENGTH"):
        meta = meta[5:]
    return lambda request, ip, paths: _header_values(request.META.get(meta))


def _header_values(raw: str | None) -> tuple[str, ...] | None:
    """What a header condition is tried against, lower-cased: the whole value, and each comma-separated part,
    because the server joins a header sent twice with a comma (`X-Debug: 1` twice reads `1,1`). Trying the parts
    too never helps a client past a rule: it could have sent any one part alone."""
    if raw is None:
        return None
    raw = raw.lower()
    return (raw, *(part.strip() for part in raw.split(","))) if "," in raw else (raw,)


def _text_predicate(op: str, value: str):
    if op == "eq":
        return lambda actual: actual == value
    if op == "prefix":
        return lambda actual: actual.startswith(value)
    if op == "contains":
        return lambda actual: value in actual
    pattern = re.compile(fnmatch.translate(value))
    return lambda actual: pattern.match(actual) is not None


def _predicate(condition: dict):
    op, value = condition["op"], condition["value"]
    if condition["field"] == "ip":
        if op == "cidr":
            network = ipaddress.ip_network(value)

            def in_network(ip):
                try:
                    return ipaddress.ip_address(ip) in network
                except ValueError:
                    return False
            return in_network
        return lambda ip: ip == value
    if condition["field"] in ("header", "user_agent"):  # values compared case-insensitively (docs/edge.md)
        test = _text_predicate(op, value.lower())
        return lambda values: any(test(v) for v in values)
    test = _text_predicate(op, value)
    if condition["field"] == "path":  # any name of the path the edge serves
        return lambda paths: any(test(path) for path in paths)
    return test


def rule_compile(rule: FirewallRule) -> Compiled:
    tests = []
    for condition in rule.conditions:
        getter, predicate = _getter(condition), _predicate(condition)
        tests.append((getter, predicate))
    return Compiled(rule.pk, rule.action, tuple(tests), rule.rate_limit_requests, rule.rate_limit_window_seconds)


def rules_compiled(*, project_id: str) -> tuple[Compiled, ...]:
    rows = FirewallRule.objects.filter(project_id=project_id, enabled=True).order_by("priority", "created_at")
    return tuple(rule_compile(rule) for rule in rows)


def rule_matching(rules, request, ip: str, paths: tuple[str, ...]) -> Compiled | None:
    for rule in rules:
        for getter, predicate in rule.tests:
            actual = getter(request, ip, paths)
            if actual is None or not predicate(actual):
                break
        else:
            return rule
    return None


# Enforcement (the edge) -------------------------------------------------------------------------------

def firewall_event_record(*, project_id: str, rule: Compiled, request, ip: str, path: str) -> None:
    """One event per refused request, at most FIREWALL_EVENTS_PER_MINUTE per (rule, address): a flood is
    refused in full but recorded in part. `path` is the normalised path."""
    if ratelimit.hit(f"fw-event:{rule.id}:{ip}", 60) > settings.FIREWALL_EVENTS_PER_MINUTE:
        return
    FirewallEvent.objects.create(project_id=project_id, rule_id=rule.id, action=rule.action, ip=ip[:45],
                                 method=request.method[:16], path=path[:512],
                                 user_agent=request.META.get("HTTP_USER_AGENT", "")[:512])


def _challenge_cookie(project_id: str) -> str:
    return f"svc_fw_{project_id}"


def challenge_passed(request, project_id: str, ip: str) -> bool:
    try:
        data = signing.loads(request.COOKIES.get(_challenge_cookie(project_id), ""), salt=CHALLENGE_SALT,
                             max_age=settings.FIREWALL_CHALLENGE_SECONDS)
    except signing.BadSignature:
        return False
    return data == {"p": project_id, "ip": ip}


def _challenge_page(request, project_id: str, ip: str) -> HttpResponse:
    token = signing.dumps({"p": project_id, "ip": ip, "t": "challenge"}, salt=CHALLENGE_SALT)
    target = escape(request.get_full_path())
    body = ("<!doctype html><html lang=en><head><meta charset=utf-8><title>One moment</title>"
            "<meta name=robots content=noindex></head><body><main>"
            "<h1>Checking your browser</h1><p>Press the button to continue to the site.</p>"
            f"<form method=post action='{CHALLENGE_PATH}' id=svc-challenge>"
            f"<input type=hidden name=token value='{escape(token)}'><input type=hidden name=next value='{target}'>"
            "<button type=submit>Continue</button></form></main>"
            "<script>document.getElementById('svc-challenge').submit()</script></body></html>")
    response = HttpResponse(body, status=403, content_type="text/html; charset=utf-8")
    response["Cache-Control"] = "no-store"
    return response


def challenge_answer(request, *, project_id: str, ip: str) -> HttpResponse:
    """POST to CHALLENGE_PATH: a valid token from the page (bound to project and address) sets the cookie and
    goes back; answers are limited per address (FIREWALL_CHALLENGE_PER_MINUTE)."""
    if request.method != "POST":
        return HttpResponse("Method not allowed", status=405, content_type="text/plain")
    if ratelimit.hit(f"fw-challenge:{ip}", 60) > settings.FIREWALL_CHALLENGE_PER_MINUTE:
        return HttpResponse("Too many attempts; try again in a minute.", status=429, content_type="text/plain",
                            headers={"Retry-After": "60"})
    try:
        data = signing.loads(request.POST.get("token", ""), salt=CHALLENGE_SALT, max_age=600)
    except signing.BadSignature:
        data = None
    if data != {"p": project_id, "ip": ip, "t": "challenge"}:
        return HttpResponse("The check failed; reload the page.", status=403, content_type="text/plain")
    target = request.POST.get("next", "/")
    if not target.startswith("/") or not url_has_allowed_host_and_scheme(target, allowed_hosts=None):
        target = "/"
    response = HttpResponseRedirect(target)
    response.set_cookie(_challenge_cookie(project_id), signing.dumps({"p": project_id, "ip": ip}, salt=CHALLENGE_SALT),
                        max_age=settings.FIREWALL_CHALLENGE_SECONDS, httponly=True, samesite="Lax",
                        secure=request.is_secure())
    return response


def firewall_enforce(request, *, deployment, rules, paths: tuple[str, ...]) -> HttpResponse | None:
    """For the edge: None to serve the request, or the refusal (403 deny, 403 challenge page, 429).

    `paths` are the names the request's path goes by, the normalised path first (platform_app/services/edge/
    paths.py): for a static deployment also the served file's names (`/private.html` for `/private`), so a path
    condition matches whichever spelling the visitor used."""
    project_id = deployment.project_id
    ip = client_ip(request)
    path = paths[0]
    if path == CHALLENGE_PATH:
        return challenge_answer(request, project_id=project_id, ip=ip)
    rule = rule_matching(rules, request, ip, paths)
    if rule is None or rule.action == FirewallRule.Action.ALLOW:
        return None
    if rule.action == FirewallRule.Action.RATE_LIMIT:
        key = f"fw:{rule.id}:{ip}"
        if ratelimit.hit(key, rule.window) <= rule.requests:
            return None
        firewall_event_record(project_id=project_id, rule=rule, request=request, ip=ip, path=path)
        remaining = rule.window - int(time.time()) % rule.window
        return HttpResponse("Too many requests.", status=429, content_type="text/plain",
                            headers={"Retry-After": str(max(1, remaining)), "Cache-Control": "no-store"})
    if rule.action == FirewallRule.Action.CHALLENGE:
        if challenge_passed(request, project_id, ip):
            return None
        firewall_event_record(project_id=project_id, rule=rule, request=request, ip=ip, path=path)
        return _challenge_page(request, project_id, ip)
    firewall_event_record(project_id=project_id, rule=rule, request=request, ip=ip, path=path)
    return HttpResponse("Forbidden by the site's firewall.", status=403, content_type="text/plain",
                        headers={"Cache-Control": "no-store"})


# Events -----------------------------------------------------------------------------------------------

def firewall_events_list(*, project, hours: int):
    since = timezone.now() - timedelta(hours=hours)
    return FirewallEvent.objects.filter(project=project, at__gte=since).order_by("-at", "-id")


def firewall_events_prune(*, now=None) -> int:
    """Beat: delete events older than FIREWALL_EVENT_RETENTION_HOURS."""
    cutoff = (now or timezone.now()) - timedelta(hours=settings.FIREWALL_EVENT_RETENTION_HOURS)
    deleted, _ = FirewallEvent.objects.filter(at__lt=cutoff).delete()
    return deleted
