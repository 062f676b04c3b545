"""In-process caches for the edge's hot path: which site a host name serves (and, in isr.py, the pages it serves).

Both are `config.local_cache.LocalCache`s: a bounded dict per web process whose entries every process drops when
the cache's shared version changes, read at most every `EDGE_LOCAL_CHECK_SECONDS`. So a request costs a dict
lookup, not a database join or a Redis round trip, and a promote, rollback or domain change reaches every worker
within a second.

`edge_hosts_invalidate(project_id=...)` is what the deployment services call after a change of what a project's
hosts serve (promote, rollback, a component's rollout): it drops only the entries of that project's hosts and of
hosts that served nothing (a new deployment's address may be one), so the rest of a busy platform stays cached,
and so do the kept directory answers resting on the platform's own host (config/kept_answers.py). Without a project
(a domain added, verified or removed, which may move any host) it drops everything. Saves of projects,
deployments and the edge's own rows call it too (model signals, connected here by model label so this module
imports no model), which covers builds finishing, admin edits and test fixtures.
"""
from django.conf import settings
from django.db import transaction
from django.db.models.signals import post_delete, post_save
from django.core.signals import setting_changed

from config.local_cache import MISSING, LocalCache  # noqa: F401 - MISSING is what `hosts.get` answers for a miss

hosts = LocalCache("hosts", ttl=settings.EDGE_HOSTS_TTL_SECONDS, check_setting="EDGE_LOCAL_CHECK_SECONDS")


UNSERVED = "unserved"  # the tag of a host of the deploy domain that serves nothing yet


def host_tag(site):
    """The tag of a host's entry: its project; UNSERVED; None for a host outside the deploy domain's projects
    (the platform itself, a custom domain's answer: only a whole invalidation moves those)."""
    if site.deployment is False:
        return UNSERVED
    return getattr(site.deployment, "project_id", None) if site.deployment else None


def edge_hosts_invalidate(*_args, project_id: str | None = None, **_kwargs) -> None:
    """Forget which site the hosts of `project_id` (None: every host) serve, everywhere (now here, within a second
    elsewhere), and again once the current transaction commits, so a request served meanwhile cannot keep the old
    answer."""
    if project_id is None:
        forget = hosts.invalidate
    else:
        def forget():
            hosts.invalidate_tags([project_id, UNSERVED])
    forget()
    transaction.on_commit(forget)


SITE_FIELDS = {"status", "artifact_path", "snapshot", "env", "project"}  # a deployment's, that its hosts serve


def _project_of(instance) -> str | None:
    return instance.pk if instance._meta.model_name == "project" else instance.project_id


def _on_save(sender, instance=None, update_fields=None, **kwargs):
    """A deployment's save: only a change of what its hosts serve (a build saves its row often)."""
    if update_fields is None or SITE_FIELDS & set(update_fields):
        edge_hosts_invalidate(project_id=_project_of(instance))


def _on_project_row(sender, instance=None, **kwargs):
    edge_hosts_invalidate(project_id=_project_of(instance))


post_save.connect(_on_save, sender="platform_app.Deployment", dispatch_uid="edge-hosts-save-platform_app.Deployment")
post_delete.connect(_on_project_row, sender="platform_app.Deployment",
                    dispatch_uid="edge-hosts-delete-platform_app.Deployment")
# a project's every save: the cached site holds the project row (its name on the preview page, its switches)
for _label in ("platform_app.Project", "platform_app.FirewallRule", "platform_app.AnalyticsSettings",
               "platform_app.Component"):
    post_save.connect(_on_project_row, sender=_label, dispatch_uid=f"edge-hosts-save-{_label}")
    post_delete.connect(_on_project_row, sender=_label, dispatch_uid=f"edge-hosts-delete-{_label}")
post_save.connect(edge_hosts_invalidate, sender="platform_app.Domain", dispatch_uid="edge-hosts-save-domain")
post_delete.connect(edge_hosts_invalidate, sender="platform_app.Domain", dispatch_uid="edge-hosts-delete-domain")


def _on_setting(setting=None, **kwargs):
    if setting in ("DEPLOY_DOMAIN", "ARTIFACT_ROOT", "SITE_URL"):
        hosts.clear()


setting_changed.connect(_on_setting, dispatch_uid="edge-hosts-settings")
