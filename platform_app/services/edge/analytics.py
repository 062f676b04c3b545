"""Web analytics without cookies: the tracker script, its beacons, the hourly roll-up and the reports.

A visitor is `sha256(daily salt | address | user agent | project)`: the salt is random, lives in the cache
until the end of its UTC day and is never written to the database, so visitors can be counted within a day but
not followed across days, and the address is not recoverable. Referrers are kept as host names only.

Beacons are stored raw (`AnalyticsEvent`); `analytics_rollup` (beat) folds the events of finished hours into
one row per visitor and day (`AnalyticsVisitor`: page views by path, first referrer, bounce) and histograms of
Web Vitals per hour, path and metric (`AnalyticsVitalHour`), then deletes them. Reports read the rows and
the events not yet rolled up together, so they are always current.
"""
import hashlib
import math
import re
import secrets
from collections import Counter, defaultdict
from datetime import datetime, time, timedelta
from datetime import timezone as dt_timezone
from urllib.parse import urlsplit

from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.utils import timezone

from config import ratelimit
from config.errors import ValidationFailed
from config.parsers import json_text_load
from platform_app.models import AnalyticsEvent, AnalyticsSettings, AnalyticsVisitor, AnalyticsVitalHour

VITALS = ("LCP", "INP", "CLS", "TTFB", "FCP")
VITAL_MAX = {"CLS": 100.0}  # unitless; the others are milliseconds
VITAL_MAX_MS = 600_000.0
MAX_PATH = 512
BOTS = re.compile(r"bot|crawl|spider|slurp|headless|phantom|lighthouse|curl|wget|python|httpx|go-http|java/|"
                  r"okhttp|libwww|scrapy|facebookexternalhit|preview|monitor", re.I)
SCRIPT_PATH = "/v1/analytics/{}/svc.js"
_HEAD = re.compile(rb"</head\s*>", re.I)
_BODY = re.compile(rb"</body\s*>", re.I)


# Settings ---------------------------------------------------------------------------------------------

def analytics_enabled(*, project_id: str) -> bool:
    return AnalyticsSettings.objects.filter(project_id=project_id, enabled=True).exists()


@transaction.atomic
def analytics_set(*, project, enabled: bool) -> AnalyticsSettings:
    row, _ = AnalyticsSettings.objects.select_for_update().get_or_create(project=project)
    row.enabled, row.updated_at = enabled, timezone.now()
    row.save()
    return row


# The script -------------------------------------------------------------------------------------------

def script_url(project_id: str) -> str:
    return settings.SITE_URL.rstrip("/") + SCRIPT_PATH.format(project_id)


def script_inject(body: bytes, *, project_id: str) -> bytes:
    """The page with `<script src=".../svc.js" defer>` before `</head>` (else `</body>`); unchanged without both."""
    tag = f'<script src="{script_url(project_id)}" defer></script>'.encode()
    for pattern in (_HEAD, _BODY):
        match = pattern.search(body)
        if match:
            return body[:match.start()] + tag + body[match.start():]
    return body


TRACKER = r"""(function () {
  "use strict";
  var d = document, n = navigator, w = window, s = d.currentScript;
  if (n.doNotTrack === "1" || w.doNotTrack === "1" || n.msDoNotTrack === "1" || n.globalPrivacyControl === true) return;
  if (!s || !n.sendBeacon || !w.JSON) return;
  var url = s.src.replace(/svc\.js(\?.*)?$/, "beacon");
  function send(data) { try { n.sendBeacon(url, JSON.stringify(data)); } catch (e) { /* never break the page */ } }
  var ref = d.referrer;
  try { if (ref && new URL(ref).host === location.host) ref = ""; } catch (e) { ref = ""; }
  function pageview() {
    var body = {type: "pageview", path: location.pathname};
    if (ref) body.referrer = ref;
    ref = "";
    send(body);
  }
  pageview();
  if (w.history && history.pushState) {
    var push = history.pushState;
    history.pushState = function () { push.apply(this, arguments); pageview(); };
    w.addEventListener("popstate", pageview);
  }
  var path = location.pathname, vitals = {}, sent = false;
  function observe(type, each, options) {
    try {
      var o = new PerformanceObserver(function (list) { list.getEntries().forEach(each); });
      var init = {type: type, buffered: true};
      for (var k in options || {}) init[k] = options[k];
      o.observe(init);
    } catch (e) { /* not supported here */ }
  }
  observe("paint", function (e) { if (e.name === "first-contentful-paint") vitals.FCP = e.startTime; });
  observe("largest-contentful-paint", function (e) { vitals.LCP = e.startTime; });
  var cls = 0;
  observe("layout-shift", function (e) { if (!e.hadRecentInput) { cls += e.value; vitals.CLS = cls; } });
  observe("event", function (e) {
    if (e.interactionId && (!vitals.INP || e.duration > vitals.INP)) vitals.INP = e.duration;
  }, {durationThreshold: 16});
  var nav = w.performance && performance.getEntriesByType && performance.getEntriesByType("navigation")[0];
  if (nav && nav.responseStart > 0) vitals.TTFB = nav.responseStart;
  function flush() {
    if (sent) return;
    sent = true;
    for (var name in vitals) {
      var v = vitals[name];
      send({type: "vital", path: path, name: name, value: name === "CLS" ? Math.round(v * 10000) / 10000 : Math.round(v)});
    }
  }
  d.addEventListener("visibilitychange", function () { if (d.visibilityState === "hidden") flush(); });
  w.addEventListener("pagehide", flush);
})();
"""


def script_source() -> str:
    return TRACKER


# Beacons ----------------------------------------------------------------------------------------------

def _origin_host(origin: str | None) -> str:
    try:
        return (urlsplit(origin or "").hostname or "").lower()
    except ValueError:
        return ""


def beacon_origin_allowed(*, project_id: str, origin: str | None, site_of) -> bool:
    """Whether pages at `origin` may send beacons for this project: the origin's host (any scheme and port) is
    one the edge serves for this project — `<slug>.DEPLOY_DOMAIN`, a deployment's `<slug>-<short id>`
    address, a verified custom domain — and the project has analytics on. `site_of(host)` is the edge's cached
    lookup (`platform_app.edge.site_for`: an object with `deployment` and `analytics`), so a beacon costs no query
    to check its origin."""
    host = _origin_host(origin)
    if not host:
        return False
    site = site_of(host)
    deployment = getattr(site, "deployment", None)
    return bool(deployment and deployment.project_id == project_id and site.analytics)


def _daily_salt(day) -> str:
    key = f"analytics:salt:{day.isoformat()}"
    end = datetime.combine(day + timedelta(days=1), time.min, tzinfo=dt_timezone.utc)
    ttl = max(60, int((end - timezone.now()).total_seconds()) + 60)
    try:
        cache.add(key, secrets.token_hex(16), ttl)
        salt = cache.get(key)
    except Exception:  # noqa: BLE001 - cache down: this process's own salt for the day
        salt = None
    if salt is None:
        salt = _FALLBACK_SALTS.setdefault(day, secrets.token_hex(16))
        for old in [d for d in _FALLBACK_SALTS if d != day]:
            _FALLBACK_SALTS.pop(old, None)
    return salt


_FALLBACK_SALTS: dict = {}


def visitor_id(*, project_id: str, ip: str, user_agent: str, day) -> str:
    raw = "|".join((_daily_salt(day), ip, user_agent, project_id))
    return hashlib.sha256(raw.encode()).hexdigest()[:32]


def is_bot(user_agent: str) -> bool:
    return not user_agent or BOTS.search(user_agent) is not None


def _invalid(field: str, message: str) -> ValidationFailed:
    return ValidationFailed(f"Invalid beacon: {field}: {message}", details={field: [message]})


def beacon_parse(raw: bytes) -> dict:
    """The beacon body checked (400 with details when malformed or larger than ANALYTICS_BEACON_MAX_BYTES)."""
    if len(raw) > settings.ANALYTICS_BEACON_MAX_BYTES:
        raise ValidationFailed(f"A beacon has at most {settings.ANALYTICS_BEACON_MAX_BYTES} bytes.",
                               code="payload_too_large", details={"maxBytes": settings.ANALYTICS_BEACON_MAX_BYTES})
    try:
        # the platform's bounded reader: the beacon arrives as text/plain, which no JSON parser of DRF reads, so
        # its depth limit (a RecursionError otherwise) and value rules are applied here
        data = json_text_load(raw.decode("utf-8"))
    except ValueError:  # UnicodeDecodeError included
        raise ValidationFailed("The beacon is not JSON.", code="malformed_json") from None
    if not isinstance(data, dict):
        raise _invalid("non_field_errors", "Expected a JSON object.")
    unknown = sorted(set(data) - {"type", "path", "referrer", "name", "value"})
    if unknown:
        raise ValidationFailed("Unknown beacon fields.", details={k: ["Unknown field."] for k in unknown})
    kind, path = data.get("type"), data.get("path")
    if kind not in AnalyticsEvent.Type.values:
        raise _invalid("type", "Must be pageview or vital.")
    if not isinstance(path, str) or not path.startswith("/") or len(path) > MAX_PATH or "\x00" in path:
        raise _invalid("path", f"A path starting with / of at most {MAX_PATH} characters.")
    clean = {"type": kind, "path": path.split("?", 1)[0].split("#", 1)[0], "referrer": "", "name": "", "value": None}
    referrer = data.get("referrer")
    if referrer is not None:
        if not isinstance(referrer, str) or len(referrer) > 2048:
            raise _invalid("referrer", "A URL of at most 2048 characters.")
        try:
            clean["referrer"] = (urlsplit(referrer).hostname or "")[:253]
        except ValueError:
            clean["referrer"] = ""
    if kind == "vital":
        name, value = data.get("name"), data.get("value")
        if name not in VITALS:
            raise _invalid("name", f"One of {', '.join(VITALS)}.")
        top = VITAL_MAX.get(name, VITAL_MAX_MS)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= top:
            raise _invalid("value", f"A number from 0 to {top:g}.")
        clean["name"], clean["value"] = name, float(value)
    elif data.get("name") is not None or data.get("value") is not None:
        raise _invalid("name", "Only vital beacons carry name and value.")
    return clean


def analytics_beacon(*, project_id: str, raw: bytes, origin: str | None, ip: str, user_agent: str,
                     site_of) -> bool:
    """Record one beacon; True when stored. Malformed → 400; a bot, an unknown project, one with analytics
    off, or an origin not the project's (`beacon_origin_allowed`) → ignored (False); more than
    ANALYTICS_BEACONS_PER_MINUTE per project and address → 429."""
    data = beacon_parse(raw)
    if is_bot(user_agent) or not beacon_origin_allowed(project_id=project_id, origin=origin, site_of=site_of):
        return False
    ratelimit.consume(f"beacon:{project_id}:{ip}", settings.ANALYTICS_BEACONS_PER_MINUTE, 60,
                      "Too many analytics events from this address.")
    if data["referrer"].lower() == _origin_host(origin):
        data["referrer"] = ""  # a link within the site is no referral
    now = timezone.now()
    AnalyticsEvent.objects.create(project_id=project_id, at=now, visitor=visitor_id(
        project_id=project_id, ip=ip, user_agent=user_agent[:512], day=now.date()), **data)
    return True


# Roll-up ----------------------------------------------------------------------------------------------

def _vital_key(name: str, value: float) -> str:
    return f"{value:.4f}".rstrip("0").rstrip(".") if name == "CLS" else str(int(round(value)))


def _hour(at: datetime) -> datetime:
    return at.replace(minute=0, second=0, microsecond=0)


def analytics_rollup(*, now: datetime | None = None, batch: int = 5000) -> int:
    """Beat: fold events of finished hours into visitor and vitals rows, delete them; returns events folded."""
    cutoff = _hour(now or timezone.now())
    total = 0
    while True:
        with transaction.atomic():
            events = list(AnalyticsEvent.objects.select_for_update(skip_locked=True)
                          .filter(at__lt=cutoff).order_by("at", "id")[:batch])
            if not events:
                return total
            _fold(events)
            AnalyticsEvent.objects.filter(pk__in=[e.pk for e in events]).delete()
        total += len(events)


def _fold(events) -> None:
    visits: dict = {}
    vitals: dict = defaultdict(Counter)
    for e in events:
        if e.type == AnalyticsEvent.Type.PAGEVIEW:
            key = (e.project_id, e.at.date(), e.visitor)
            visit = visits.setdefault(key, {"page_views": 0, "paths": Counter(), "referrer": e.referrer, "first_at": e.at})
            visit["page_views"] += 1
            visit["paths"][e.path] += 1
        else:
            vitals[(e.project_id, _hour(e.at), e.path, e.name)][_vital_key(e.name, e.value)] += 1
    for (project_id, day, visitor), visit in visits.items():
        row = AnalyticsVisitor.objects.select_for_update().filter(project_id=project_id, day=day,
                                                                  visitor=visitor).first()
        if row is None:
            AnalyticsVisitor.objects.create(project_id=project_id, day=day, visitor=visitor,
                                            page_views=visit["page_views"], paths=dict(visit["paths"]),
                                            referrer=visit["referrer"], first_at=visit["first_at"])
            continue
        paths = Counter(row.paths)
        paths.update(visit["paths"])
        row.page_views += visit["page_views"]
        row.paths = dict(paths)
        if visit["first_at"] < row.first_at:
            row.first_at, row.referrer = visit["first_at"], visit["referrer"]
        row.save(update_fields=["page_views", "paths", "first_at", "referrer"])
    for (project_id, hour, path, name), histogram in vitals.items():
        row, _ = AnalyticsVitalHour.objects.select_for_update().get_or_create(
            project_id=project_id, hour=hour, path=path, name=name)
        merged = Counter(row.histogram)
        merged.update(histogram)
        row.histogram, row.samples = dict(merged), sum(merged.values())
        row.save(update_fields=["histogram", "samples"])


def analytics_prune(*, now: datetime | None = None) -> int:
    """Drop visitor and vitals rows older than ANALYTICS_RETENTION_DAYS."""
    day = (now or timezone.now()).date() - timedelta(days=settings.ANALYTICS_RETENTION_DAYS)
    a, _ = AnalyticsVisitor.objects.filter(day__lt=day).delete()
    b, _ = AnalyticsVitalHour.objects.filter(hour__lt=datetime.combine(day, time.min, tzinfo=dt_timezone.utc)).delete()
    return a + b


# Reports ----------------------------------------------------------------------------------------------

def _since(days: int, now: datetime | None) -> tuple[datetime, datetime]:
    now = now or timezone.now()
    first = now.date() - timedelta(days=days - 1)
    return datetime.combine(first, time.min, tzinfo=dt_timezone.utc), now


def _visits(project, days: int, now=None) -> dict:
    """{(day, visitor): {"page_views", "paths", "referrer", "first_at"}}: rolled-up rows plus raw events."""
    since, now = _since(days, now)
    visits = {}
    for row in AnalyticsVisitor.objects.filter(project=project, day__gte=since.date()):
        visits[(row.day, row.visitor)] = {"page_views": row.page_views, "paths": Counter(row.paths),
                                          "referrer": row.referrer, "first_at": row.first_at}
    raw = (AnalyticsEvent.objects.filter(project=project, type=AnalyticsEvent.Type.PAGEVIEW, at__gte=since)
           .order_by("at", "id").values_list("at", "visitor", "path", "referrer"))
    for at, visitor, path, referrer in raw:
        visit = visits.setdefault((at.date(), visitor), {"page_views": 0, "paths": Counter(), "referrer": referrer,
                                                         "first_at": at})
        visit["page_views"] += 1
        visit["paths"][path] += 1
        if at < visit["first_at"]:
            visit["first_at"], visit["referrer"] = at, referrer
    return visits


def analytics_overview(*, project, days: int, now=None) -> dict:
    visits = _visits(project, days, now)
    visitors = len(visits)
    referrers = Counter(v["referrer"] for v in visits.values() if v["referrer"])
    bounced = sum(1 for v in visits.values() if v["page_views"] == 1)
    return {"days": days, "visitors": visitors, "page_views": sum(v["page_views"] for v in visits.values()),
            "bounce_rate": round(bounced / visitors, 4) if visitors else 0.0,
            "top_referrers": [{"referrer": r, "visitors": n}
                              for r, n in sorted(referrers.items(), key=lambda item: (-item[1], item[0]))[:10]]}


def analytics_top_paths(*, project, days: int, limit: int, now=None) -> list[dict]:
    views, visitors = Counter(), Counter()
    for visit in _visits(project, days, now).values():
        for path, n in visit["paths"].items():
            views[path] += n
            visitors[path] += 1
    ranked = sorted(views, key=lambda p: (-views[p], -visitors[p], p))[:limit]
    return [{"path": p, "page_views": views[p], "visitors": visitors[p]} for p in ranked]


def analytics_daily(*, project, days: int, now=None) -> list[dict]:
    """Page views and visitors per day, oldest first, days without any included (the dashboard's chart)."""
    since, now = _since(days, now)
    per_day = defaultdict(lambda: [0, 0])
    for (day, _), visit in _visits(project, days, now).items():
        per_day[day][0] += visit["page_views"]
        per_day[day][1] += 1
    out = []
    for i in range(days):
        day = since.date() + timedelta(days=i)
        out.append({"day": day, "page_views": per_day[day][0], "visitors": per_day[day][1]})
    return out


def _p75(histogram: Counter) -> float | None:
    samples = sum(histogram.values())
    if not samples:
        return None
    rank = math.ceil(0.75 * samples)  # nearest rank
    seen = 0
    for value in sorted(histogram, key=float):
        seen += histogram[value]
        if seen >= rank:
            return float(value)
    return None  # pragma: no cover


def analytics_vitals(*, project, days: int, path: str | None = None, now=None) -> dict:
    since, now = _since(days, now)
    histograms = {name: Counter() for name in VITALS}
    rows = AnalyticsVitalHour.objects.filter(project=project, hour__gte=since)
    raw = AnalyticsEvent.objects.filter(project=project, type=AnalyticsEvent.Type.VITAL, at__gte=since)
    if path is not None:
        rows, raw = rows.filter(path=path), raw.filter(path=path)
    for name, histogram in rows.values_list("name", "histogram"):
        if name in histograms:
            histograms[name].update(histogram)
    for name, value in raw.values_list("name", "value"):
        if name in histograms:
            histograms[name][_vital_key(name, value)] += 1
    return {"days": days, "path": path,
            "metrics": {name: {"p75": _p75(h), "samples": sum(h.values())} for name, h in histograms.items()}}
