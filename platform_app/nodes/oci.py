"""Images from any registry over the OCI distribution API (`/v2/`), with httpx: references, authentication,
manifests and blobs, every one checked against its digest, every address through the outbound guard.

- **References**: `[registry/]name[:tag|@digest]`; no registry is Docker Hub (`registry-1.docker.io`), where a
  single name is `library/<name>`; no tag is `latest`.
- **Authentication**: anonymous first; a 401 answers how: `Bearer realm=...,service=...,scope=...` (a token asked
  from the realm, with the credentials as basic auth when there are some) or `Basic` (the credentials).
- **Addresses**: the caller's `check(url) -> config.outbound.Target` decides every address: the platform's
  `outbound_check` in the web process, the egress guard's rules (`node_check`) on a node, with the platform's
  `OUTBOUND_ALLOWED_NETWORKS` and `OUTBOUND_ALLOW_HTTP` handed over in the assignment. The connection is made to
  the checked address only, with the name in `Host` and TLS SNI; redirects (blob storage) are checked hop by hop,
  and credentials never follow to another origin. `https`, or plain `http` only where allowed (after `https`
  failed to connect: a private registry without TLS).
- **Bounds**: a manifest or config is at most MANIFEST_MAX_BYTES; a blob is read up to the size its descriptor
  says (and the caller's limit), then its digest is checked before it is used.

No Django here: nodes read no settings module (docs/isolation.md).
"""
import base64
import hashlib
import json
import re
import ssl
import time
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import urlencode, urljoin, urlsplit

import httpx

from config.outbound import Target

DEFAULT_REGISTRY = "registry-1.docker.io"
MANIFEST_MAX_BYTES = 4 * 1024 * 1024
TIMEOUT = httpx.Timeout(60.0, connect=5.0)
INDEX_TYPES = ("application/vnd.oci.image.index.v1+json",
               "application/vnd.docker.distribution.manifest.list.v2+json")
MANIFEST_TYPES = ("application/vnd.oci.image.manifest.v1+json",
                  "application/vnd.docker.distribution.manifest.v2+json")
ACCEPT = ", ".join(INDEX_TYPES + MANIFEST_TYPES)
LAYER_TYPES = ("application/vnd.oci.image.layer.v1.tar+gzip", "application/vnd.oci.image.layer.v1.tar",
               "application/vnd.docker.image.rootfs.diff.tar.gzip",
               "application/vnd.oci.image.layer.nondistributable.v1.tar+gzip",
               "application/vnd.docker.image.rootfs.foreign.diff.tar.gzip")
DIGEST = re.compile(r"^(sha256:[a-f0-9]{64}|sha512:[a-f0-9]{128})$")
REFERENCE = re.compile(r"^(?:(?P<registry>[a-z0-9.-]+(?::[0-9]+)?|localhost(?::[0-9]+)?)/)?"
                       r"(?P<name>[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*)"
                       r"(?::(?P<tag>[\w][\w.-]{0,127}))?(?:@(?P<digest>sha256:[a-f0-9]{64}))?$")


class RegistryError(Exception):
    """A registry refused, failed or answered something unusable: the message names the registry and its answer
    (or the limit), fit for a deployment's log."""


@dataclass(frozen=True)
class Reference:
    registry: str          # host[:port]
    name: str              # repository
    tag: str = "latest"
    digest: str = ""

    @classmethod
    def parse(cls, text: str) -> "Reference":
        match = REFERENCE.match((text or "").strip())
        if not match or len(text) > 300:
            raise RegistryError(f"{text[:300]!r} is not an image reference ([registry/]name[:tag][@digest]).")
        first = text.split("/", 1)[0]
        registry = match["registry"] if match["registry"] and ("." in first or ":" in first
                                                               or first.startswith("localhost")) else ""
        name = match["name"] if registry or not match["registry"] else f"{match['registry']}/{match['name']}"
        if registry in ("", "docker.io", "index.docker.io"):
            registry = DEFAULT_REGISTRY
            name = name if "/" in name else f"library/{name}"
        return cls(registry=registry, name=name, tag=match["tag"] or "latest", digest=match["digest"] or "")

    @property
    def pinned(self) -> str:
        """What to ask the registry for: the digest when there is one, else the tag."""
        return self.digest or self.tag

    def __str__(self) -> str:
        return f"{self.registry}/{self.name}" + (f"@{self.digest}" if self.digest else f":{self.tag}")


def digest_of(data: bytes, algorithm: str = "sha256") -> str:
    return f"{algorithm}:{hashlib.new(algorithm, data).hexdigest()}"


def digest_check(digest: str) -> str:
    if not DIGEST.match(digest or ""):
        raise RegistryError(f"{str(digest)[:100]!r} is not a digest this node checks (sha256 or sha512).")
    return digest


def node_check(*, networks=(), dns_servers=(), allow_http: bool = False):
    """The outbound guard's rules on a node (no settings module there): the address a registry URL may be
    reached at, with the allow-list and scheme rule the platform handed over; RegistryError otherwise."""
    from platform_app.sandbox import relay

    policy = relay.EgressPolicy(networks, dns_servers)

    def check(url: str) -> Target:
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        if scheme not in ("https", "http") or (scheme == "http" and not allow_http) or "@" in parts.netloc:
            raise RegistryError(f"{parts.netloc[:100]}: this address cannot be reached from the platform.")
        try:
            port = parts.port or (443 if scheme == "https" else 80)
            address = policy.address_for(parts.hostname or "", port)
        except (relay.Refused, ValueError):
            raise RegistryError(f"{parts.netloc[:100]}: this address cannot be reached from the platform.")
        return Target(url=url, scheme=scheme, host=parts.hostname, port=port, addresses=(address,),
                      purpose="image registry")

    return check


def platform_check(*, allow_http: bool | None = None):
    """The web process's check: the platform's own guard (config/outbound.py), its one message when refused."""
    from config.outbound import OutboundRefused, outbound_check

    def check(url: str) -> Target:
        try:
            return outbound_check(url, purpose="image registry", allow_http=allow_http)
        except OutboundRefused:
            raise RegistryError(f"{urlsplit(url).netloc[:100]}: this address cannot be reached from the platform.")

    return check


@lru_cache(maxsize=2)
def _tls(bundle: str = "") -> ssl.SSLContext:
    import certifi

    return ssl.create_default_context(cafile=bundle or certifi.where())


def _challenge(header: str) -> tuple[str, dict]:
    """`Bearer realm="...",service="..."` -> ("bearer", {...})."""
    scheme, _, rest = (header or "").strip().partition(" ")
    return scheme.lower(), {k.lower(): v for k, v in re.findall(r'(\w+)="([^"]*)"', rest)}


def _answer(resp: httpx.Response) -> str:
    """A registry's error answer in a few words: its status and the `errors` it listed."""
    text = f"{resp.status_code} {resp.reason_phrase}".strip()
    try:
        errors = json.loads(resp.read()[:4096]).get("errors") or []
        detail = "; ".join(f"{e.get('code', '')}: {e.get('message', '')}".strip(": ") for e in errors[:3])
    except (ValueError, AttributeError, httpx.HTTPError):
        detail = ""
    return f"{text} ({detail[:300]})" if detail else text


class Registry:
    """A session with one registry for one repository: its scheme, its token once it asked for one."""

    def __init__(self, reference: Reference, *, check, username: str = "", password: str = "",
                 ca_bundle: str = ""):
        self.reference, self.check = reference, check
        self.credentials = (username, password) if username or password else None
        self.scheme, self.authorization = "https", ""
        # plain http is tried only after https failed, and only gets through where the check allows it
        self.http = httpx.Client(trust_env=False, follow_redirects=False, verify=_tls(ca_bundle), timeout=TIMEOUT)

    def close(self) -> None:
        self.http.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @property
    def origin(self) -> str:
        return f"{self.scheme}://{self.reference.registry}"

    # -- requests -------------------------------------------------------------------------------------------
    def _send(self, method: str, url: str, headers: dict) -> httpx.Response:
        """One request (streamed) through the check, following redirects hop by hop (at most 5)."""
        for _ in range(6):
            target = self.check(url)
            extensions = {} if target.is_literal or target.scheme != "https" else {"sni_hostname": target.host}
            request = self.http.build_request(method, target.url_for(target.addresses[0]),
                                              headers={**headers, "Host": target.host_header,
                                                       "Accept-Encoding": "identity"}, extensions=extensions)
            try:
                resp = self.http.send(request, stream=True)
            except httpx.HTTPError as exc:
                raise RegistryError(f"{self.reference.registry}: {exc.__class__.__name__} ({str(exc)[:200]})")
            if resp.status_code not in (301, 302, 303, 307, 308) or not resp.headers.get("location"):
                return resp
            resp.close()
            following = urljoin(url, resp.headers["location"])
            if urlsplit(following)[:2] != urlsplit(url)[:2]:  # credentials never follow to another origin
                headers = {k: v for k, v in headers.items() if k.lower() != "authorization"}
            url, method = following, "GET" if resp.status_code == 303 else method
        raise RegistryError(f"{self.reference.registry}: too many redirects.")

    def request(self, method: str, path: str, accept: str = "") -> httpx.Response:
        """`path` under `/v2/` of this registry, authenticated as its 401 asks (once)."""
        headers = {"Accept": accept} if accept else {}
        resp = self._first(method, path, headers)
        if resp.status_code == 401:
            challenge = resp.headers.get("www-authenticate", "")
            answer = _answer(resp)
            resp.close()
            self._authenticate(challenge, answer)
            resp = self._send(method, f"{self.origin}/v2/{path}", {**headers, "Authorization": self.authorization})
            if resp.status_code == 401:
                answer = _answer(resp)
                resp.close()
                raise RegistryError(f"{self.reference.registry} refused the credentials: {answer}")
        return resp

    def _first(self, method: str, path: str, headers: dict) -> httpx.Response:
        if self.authorization:
            headers = {**headers, "Authorization": self.authorization}
        try:
            return self._send(method, f"{self.origin}/v2/{path}", headers)
        except RegistryError:
            if self.scheme != "https":
                raise
            self.scheme = "http"  # a registry without TLS, where the guard lets plain http through
            try:
                return self._send(method, f"{self.origin}/v2/{path}", headers)
            except RegistryError:
                self.scheme = "https"
                raise

    def _authenticate(self, challenge: str, answer: str) -> None:
        scheme, params = _challenge(challenge)
        if scheme == "basic":
            if self.credentials is None:
                raise RegistryError(f"{self.reference.registry} asks for credentials (the project has none): "
                                    f"{answer}")
            self.authorization = "Basic " + base64.b64encode(":".join(self.credentials).encode()).decode()
        elif scheme == "bearer" and params.get("realm"):
            query = {"service": params.get("service", ""),
                     "scope": params.get("scope") or f"repository:{self.reference.name}:pull"}
            url = params["realm"] + ("&" if "?" in params["realm"] else "?") + urlencode(
                {k: v for k, v in query.items() if v})
            headers = {}
            if self.credentials is not None:
                headers["Authorization"] = "Basic " + base64.b64encode(":".join(self.credentials).encode()).decode()
            resp = self._send("GET", url, headers)
            try:
                if resp.status_code != 200:
                    raise RegistryError(f"{self.reference.registry}'s token service refused: {_answer(resp)}")
                body = json.loads(resp.read()[:65536])
            except ValueError:
                raise RegistryError(f"{self.reference.registry}'s token service answered no token.")
            finally:
                resp.close()
            token = body.get("token") or body.get("access_token")
            if not token:
                raise RegistryError(f"{self.reference.registry}'s token service answered no token.")
            self.authorization = f"Bearer {token}"
        else:
            raise RegistryError(f"{self.reference.registry} asks for an authentication this node does not speak: "
                                f"{challenge[:100] or answer}")

    # -- manifests and blobs --------------------------------------------------------------------------------
    def manifest(self, ref: str) -> tuple[str, dict, bytes]:
        """(digest, document, raw bytes) of the manifest or index at `ref` (a tag or a digest); a digest asked for
        is checked against the bytes."""
        resp = self.request("GET", f"{self.reference.name}/manifests/{ref}", accept=ACCEPT)
        try:
            if resp.status_code != 200:
                raise RegistryError(f"{self.reference.registry} answered {_answer(resp)} for "
                                    f"{self.reference.name}:{ref}")
            raw = _read(resp, MANIFEST_MAX_BYTES, what="the manifest")
        finally:
            resp.close()
        algorithm = ref.split(":", 1)[0] if DIGEST.match(ref) else "sha256"
        digest = digest_of(raw, algorithm)
        if DIGEST.match(ref) and digest != ref:
            raise RegistryError(f"The manifest {ref} does not match its digest (got {digest}).")
        try:
            document = json.loads(raw)
        except ValueError:
            raise RegistryError(f"The manifest {ref} is not JSON.")
        if not isinstance(document, dict):
            raise RegistryError(f"The manifest {ref} is not a manifest.")
        return digest, document, raw

    def image_manifest(self, ref: str) -> tuple[str, dict]:
        """The linux/amd64 image manifest at `ref` (through its index when it is one): (its digest, it)."""
        digest, document, _ = self.manifest(ref)
        kind = document.get("mediaType") or ("index" if "manifests" in document else "")
        if kind in INDEX_TYPES or kind == "index":
            chosen = [m for m in document.get("manifests") or [] if isinstance(m, dict)
                      and (m.get("platform") or {}).get("os") == "linux"
                      and (m.get("platform") or {}).get("architecture") == "amd64"]
            if not chosen:
                raise RegistryError(f"{self.reference} has no linux/amd64 image.")
            digest, document, _ = self.manifest(digest_check(chosen[0].get("digest", "")))
            kind = document.get("mediaType", "")
        if kind and kind not in MANIFEST_TYPES:
            raise RegistryError(f"{self.reference}: a manifest of type {kind[:100]} (not an image).")
        if not isinstance(document.get("config"), dict) or not isinstance(document.get("layers"), list):
            raise RegistryError(f"{self.reference}: the manifest names no config or layers.")
        return digest, document

    def blob(self, descriptor: dict, out, *, limit: int, what: str = "a layer") -> int:
        """Write the blob `descriptor` names to the binary file `out`, checking its size and digest; its size.
        `limit`: what the image may still take (IMAGE_MAX_BYTES, compressed)."""
        digest = digest_check(descriptor.get("digest", ""))
        size = descriptor.get("size")
        if not isinstance(size, int) or size < 0:
            raise RegistryError(f"{digest}: the manifest gives it no size.")
        if size > limit:
            raise LimitHit(f"{what} {digest[:19]} is {size} bytes: over the image's IMAGE_MAX_BYTES")
        resp = self.request("GET", f"{self.reference.name}/blobs/{digest}")
        hasher, written = hashlib.new(digest.split(":")[0]), 0
        try:
            if resp.status_code != 200:
                raise RegistryError(f"{self.reference.registry} answered {_answer(resp)} for {digest}")
            for chunk in resp.iter_raw(1 << 20):
                written += len(chunk)
                if written > size:
                    raise RegistryError(f"{digest} is larger than the {size} bytes its manifest says.")
                hasher.update(chunk)
                out.write(chunk)
        except httpx.HTTPError as exc:
            raise RegistryError(f"{self.reference.registry}: {exc.__class__.__name__} while reading {digest}")
        finally:
            resp.close()
        got = f"{digest.split(':')[0]}:{hasher.hexdigest()}"
        if got != digest or written != size:
            raise RegistryError(f"{digest} does not match what was downloaded ({got}, {written} bytes).")
        return written


class LimitHit(RegistryError):
    """An image over one of its bounds (IMAGE_MAX_BYTES, IMAGE_MAX_LAYERS), named in the message."""


def _read(resp: httpx.Response, limit: int, *, what: str) -> bytes:
    declared = resp.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise RegistryError(f"{what} is larger than {limit} bytes.")
    chunks, size = [], 0
    for chunk in resp.iter_raw(65536):
        size += len(chunk)
        if size > limit:
            raise RegistryError(f"{what} is larger than {limit} bytes.")
        chunks.append(chunk)
    return b"".join(chunks)


def manifest_check(reference: Reference, manifest: dict, *, max_bytes: int, max_layers: int) -> int:
    """An image manifest within the bounds: its layer count and their compressed size; the total size."""
    layers = manifest["layers"]
    if len(layers) > max_layers:
        raise LimitHit(f"{reference} has {len(layers)} layers: over IMAGE_MAX_LAYERS ({max_layers})")
    total = 0
    for layer in [manifest["config"], *layers]:
        size = layer.get("size") if isinstance(layer, dict) else None
        if not isinstance(size, int) or size < 0:
            raise RegistryError(f"{reference}: a layer without a size.")
        total += size
    for layer in layers:
        kind = layer.get("mediaType", "")
        if kind not in LAYER_TYPES:
            raise RegistryError(f"{reference}: a layer of type {kind[:100] or 'unknown'}, which this node does "
                                f"not unpack (tar, tar+gzip).")
    if total > max_bytes:
        raise LimitHit(f"{reference} is {total} bytes compressed: over IMAGE_MAX_BYTES ({max_bytes})")
    return total


def resolve(reference: Reference, *, check, username: str = "", password: str = "", max_bytes: int,
            max_layers: int) -> dict:
    """What a tag means now: {"digest" (of what the reference names: an index or a manifest), "manifestDigest"
    (linux/amd64), "layers", "bytes"}, after checking the image is within its bounds. The platform asks this when
    a deployment is triggered, so the deployment runs that digest wherever and whenever it is placed."""
    started = time.monotonic()
    with Registry(reference, check=check, username=username, password=password) as registry:
        digest, _, _ = registry.manifest(reference.pinned)
        manifest_digest, manifest = registry.image_manifest(digest)
    total = manifest_check(reference, manifest, max_bytes=max_bytes, max_layers=max_layers)
    return {"digest": digest, "manifestDigest": manifest_digest, "layers": len(manifest["layers"]), "bytes": total,
            "seconds": round(time.monotonic() - started, 3)}
