"""The edge's response cache and its revalidation (ISR).

The edge keeps cacheable responses of a deployment in the cache (Redis when configured) under
(deployment, served file): the key is the file's path inside the artifact (`/about.html` whether `/about`,
`/about.html` or `//about` was asked, see paths.py), with the tags the deployment declares for it (`_tags.json`
in the artifact: `{"/blog/": ["blog"]}`, prefixes of the file's path). `POST P/isr/revalidate` drops entries by
path (resolved to its file the same way) or tag, so the next request is served fresh. Responses marked
`no-store` or `private` are never cached.
"""
import json

from django.conf import settings
from django.core.cache import cache

from config.local_cache import MISSING, LocalCache
from platform_app.services.deployments.artifacts import artifact_local
from platform_app.services.edge.paths import path_normalize, static_target, targets

TTL = 3600
# Each web process keeps the entries it served in memory too (bounded by EDGE_PAGE_CACHE_BYTES), so a hit costs
# no Redis round trip and no unpickling; a revalidation drops them in every process (config.local_cache.LocalCache).
pages = LocalCache("pages", ttl=TTL, max_bytes=settings.EDGE_PAGE_CACHE_BYTES,
                   check_setting="EDGE_LOCAL_CHECK_SECONDS")


def _key(deployment_id: str, path: str) -> str:
    return f"edge:{deployment_id}:{path}"


def _index_key(deployment_id: str) -> str:
    return f"edge-index:{deployment_id}"


def tags_for(artifact_root, path: str) -> list[str]:
    """The tags `_tags.json` gives the served file `path` (its key)."""
    manifest = artifact_root / "_tags.json"
    if not manifest.is_file():
        return []
    try:
        rules = json.loads(manifest.read_text())
    except ValueError:
        return []
    return sorted({t for prefix, tags in rules.items() if path.startswith(prefix) for t in tags})


def cached(deployment_id: str, path: str) -> dict | None:
    local = pages.get((deployment_id, path))
    if local is not MISSING:
        return local
    generation = pages.generation
    try:
        hit = cache.get(_key(deployment_id, path))
    except Exception:  # noqa: BLE001 - cache unreachable: a miss, the edge serves from the artifact
        return None
    if hit is not None:
        pages.set((deployment_id, path), hit, size=len(hit["body"]), generation=generation)
    return hit


def store(deployment_id: str, path: str, *, status: int, content_type: str, body: bytes, cache_control: str,
          tags: list[str]) -> None:
    if "no-store" in cache_control or "private" in cache_control or len(body) > settings.EDGE_CACHE_MAX_BYTES:
        return
    entry = {"status": status, "content_type": content_type, "body": body, "cache_control": cache_control}
    pages.set((deployment_id, path), entry, size=len(body))
    try:
        cache.set(_key(deployment_id, path), entry, TTL)
        index = cache.get(_index_key(deployment_id)) or {}
        index[path] = tags
        cache.set(_index_key(deployment_id), index, TTL)
    except Exception:  # noqa: BLE001 - cache unreachable: the response is simply not kept
        pass


def _keys(deployment, paths: list[str]) -> set[str]:
    """The cache keys of `paths`: each resolved to the file the edge serves for it (its normalised path when no
    file answers it)."""
    local = artifact_local(deployment)
    root = local.resolve() if local is not None else None
    keys = set()
    for path in paths:
        path = path_normalize(path)
        target = static_target(root, path) if root is not None else None
        keys.add(target.key if target else path)
    return keys


def revalidate(*, project, paths: list[str], tags: list[str]) -> dict:
    """Purge the production deployment's cached responses for these paths and tags; `purged` names the entries
    by their served file (`/` → `/index.html`)."""
    deployment = project.production_deployment
    if deployment is None:
        return {"purged": [], "deploymentId": None}
    deployment_id = deployment.pk
    keys = _keys(deployment, paths)
    index = cache.get(_index_key(deployment_id)) or {}
    wanted = {k for k in index if k in keys or set(index[k]) & set(tags)}
    wanted |= {k for k in keys if cache.get(_key(deployment_id, k)) is not None}
    for key in wanted:
        cache.delete(_key(deployment_id, key))
        index.pop(key, None)
    cache.set(_index_key(deployment_id), index, TTL)
    pages.invalidate()
    targets.invalidate()  # regenerated output may add or remove files
    return {"purged": sorted(wanted), "deployment_id": deployment_id}
