"""Template filters of the dashboard: addresses (from the one address builder), short commits, durations, ages, and
the `path` tag for the links of a long table."""
import functools
import html
import re
from datetime import timezone as dt_timezone
from urllib.parse import quote

from django import template
from django.urls import NoReverseMatch, reverse
from django.utils import timezone
from django.utils.http import RFC3986_SUBDELIMS
from django.utils.safestring import mark_safe

from config.kept_pages import rendering_kept_page, slot
from platform_app.services.projects import addresses
from platform_app.services.teams.workspaces import workspace_choices

register = template.Library()

_MARK_NAMES = ("zero", "one", "two")  # a route's arguments, in order, as `{% path %}` marks them
_MARKS = tuple(f"pathmark{name}" for name in _MARK_NAMES)
_MARK = re.compile(f"pathmark({'|'.join(_MARK_NAMES)})")


@functools.lru_cache(maxsize=256)
def _path_pattern(name: str, arity: int) -> str | None:
    try:
        return reverse(name, args=_MARKS[:arity])
    except NoReverseMatch:  # a route whose arguments are not plain text: reversed for each value
        return None


@register.simple_tag
def path(name: str, *args) -> str:
    """`{% url name a b %}` for the rows of a long table (reversing a route cost 30 µs, a hundred of them a page of
    50 projects): the route is reversed once per process with markers, which each row's values replace, quoted as
    `reverse` quotes them. A value `reverse` would check (empty, or holding a slash) goes through `reverse`."""
    values = [str(a) for a in args]
    pattern = _path_pattern(name, len(values)) if len(values) <= len(_MARKS) else None
    if pattern is None or any(not v or "/" in v for v in values):
        return reverse(name, args=values)
    quoted = {mark: quote(v, safe=RFC3986_SUBDELIMS + "/~:@") for mark, v in zip(_MARK_NAMES, values)}
    return _MARK.sub(lambda m: quoted[m.group(1)], pattern)


@register.filter
def log_spans(lines) -> str:
    """A build log's lines as the page's spans, escaped. Built in one pass: through the template loop, 2,000 lines
    took 48 ms of a page's CPU, most of it localising each line's number."""
    return mark_safe("".join(f'<span class="log-line" data-seq="{int(line.seq)}">{html.escape(line.text)}</span>\n'
                             for line in lines))  # html.escape: what Django's escape does, without its lazy wrapper


@register.filter
def ago(moment) -> str:
    """A moment shown as its age ("5 minutes ago") by static/js/relative-time.js, written as the UTC moment itself
    so that what the server renders stays true and can be kept (without JavaScript the moment is what shows)."""
    moment = moment.astimezone(dt_timezone.utc)
    return mark_safe(f'<time datetime="{moment.isoformat()}" data-ago>{moment:%Y-%m-%d %H:%M} UTC</time>')


@register.simple_tag
def project_rows(projects, workspace) -> str:
    """The workspace page's project rows, escaped, built in one pass as `log_spans` is: through the template loop,
    fifty rows of a dozen nodes each were half of the page's CPU (and the table reloads every 5 s while a build
    runs). Each project carries its `last_deployment` (selectors.projects_with_last_deployment)."""
    rows, escape = [], html.escape
    for p in projects:
        name = f'<a href="{escape(path("project", workspace.slug, p.slug))}"><strong>{escape(p.name)}</strong></a>'
        if p.framework:
            name += f'<br><span class="muted">{escape(p.framework)}</span>'
        if p.production_deployment_id:
            url = project_url(p)
            address = f'<a href="{escape(url)}">{escape(host(url))}</a>'
        else:
            address = '<span class="muted">not deployed yet</span>'
        cells = [name, address]
        d = p.last_deployment
        if d:
            status, link = escape(d.status), escape(path("deployment", workspace.slug, d.pk))
            cells += [f'<a href="{link}"><span class="badge badge-{status}">{status}</span></a> '
                      f'<span class="muted">{escape(d.env)}</span>', escape(d.branch),
                      f"<code>{escape(short_sha(d.commit_sha)) or '—'}</code>",
                      ago(d.created_at)]
        row = "".join(f"<td>{cell}</td>" for cell in cells)
        if not d:
            row += '<td colspan="4" class="muted">No deployments</td>'
        rows.append(f"<tr>{row}</tr>")
    return mark_safe("\n".join(rows))


SWITCHER_SLOT = "switcher"


def workspace_options_html(user, workspace) -> str:
    """The workspace switcher's options: the user's workspaces by name, `workspace` selected."""
    return mark_safe("".join(
        f'<option value="{html.escape(slug)}"{" selected" if pk == workspace.pk else ""}>{html.escape(name)}</option>'
        for pk, slug, name in workspace_choices(user)))


@register.simple_tag(takes_context=True)
def workspace_options(context) -> str:
    """`workspace_options_html` for the page's user and workspace; a slot in a page rendered to be kept, each
    request's own options go there (platform_app/pages/kept.py)."""
    request = context["request"]
    if rendering_kept_page(request):
        return slot(SWITCHER_SLOT)
    return workspace_options_html(request.user, context["workspace"])


@register.filter
def project_url(project) -> str:
    return addresses.project_url(project)


@register.filter
def deployment_url(deployment) -> str:
    return addresses.deployment_url(deployment)


@register.filter
def short_sha(sha) -> str:
    return (sha or "")[:7]


@register.filter
def duration(deployment) -> str:
    """How long the build took (or has been running): `1m 05s`, `42s`; empty before it started."""
    start = deployment.started_at
    if start is None:
        return ""
    seconds = int(((deployment.finished_at or timezone.now()) - start).total_seconds())
    return f"{seconds // 60}m {seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


@register.filter
def host(url: str) -> str:
    """An address without its scheme and trailing slash, for display."""
    return url.split("://", 1)[-1].rstrip("/")


ISOLATION_WORDS = {"filesystem": "files", "processes": "processes", "network": "network", "syscalls": "system calls"}


@register.filter
def sandbox_summary(report) -> str:
    """One line on what a build's or a node's sandbox kept: what was isolated and how each limit was enforced."""
    if not report:
        return ""
    if report.get("runner") == "none":
        return "without a sandbox: the code could read the node's files and reach its network"
    isolated = [ISOLATION_WORDS.get(k, k) for k, kept in (report.get("isolation") or {}).items() if kept]
    limits = [f"{name} ({how})" for name, how in (report.get("limits") or {}).items() if how]
    missing = [name for name, how in (report.get("limits") or {}).items() if not how]
    text = f"in a sandbox ({report.get('runner')}): {', '.join(isolated)} isolated; limits: {', '.join(limits)}"
    return text + (f"; not enforced: {', '.join(missing)}" if missing else "")
