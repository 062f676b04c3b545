"""The edge's response cache and its revalidation (ISR).

The edge keeps cacheable responses of a deployment in the cache (Redis when configured) under
(deployment, path), with the tags the deployment declares for that path (`_tags.json` in the artifact:
`{"/blog/": ["blog"]}`, prefixes allowed). `POST P/isr/revalidate` drops entries by path or tag, so the
next request is served fresh. Responses marked `no-store` or `private` are never cached.
"""
import json

from django.conf import settings
from django.core.cache import cache

from config.local_cache import MISSING, LocalCache

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


def revalidate(*, project, paths: list[str], tags: list[str]) -> dict:
    """Purge the production deployment's cached responses for these paths and tags."""
    deployment_id = project.production_deployment_id
    if not deployment_id:
        return {"purged": [], "deploymentId": None}
    index = cache.get(_index_key(deployment_id)) or {}
    wanted = {p for p in index if p in paths or set(index[p]) & set(tags)}
    wanted |= {p for p in paths if cache.get(_key(deployment_id, p)) is not None}
    for path in wanted:
        cache.delete(_key(deployment_id, path))
        index.pop(path, None)
    cache.set(_index_key(deployment_id), index, TTL)
    pages.invalidate()
    return {"purged": sorted(wanted), "deployment_id": deployment_id}
