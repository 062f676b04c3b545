"""A real registry and real images for the image tests and bench/deploy.py: Debian's distribution registry
(`docker-registry`) started on a free loopback port, plain HTTP, anonymous or behind htpasswd; OCI image layouts
built here from /bin/busybox (busybox-static) and pushed with skopeo."""
import gzip
import hashlib
import io
import json
import socket
import subprocess
import tarfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class RegistryServer:
    """A running docker-registry: where it listens, and the credentials it asks for (none: anonymous)."""

    host: str
    process: subprocess.Popen
    username: str = ""
    password: str = ""
    pushed: list = field(default_factory=list)

    def push(self, layout: Path, name: str, tag: str = "latest") -> str:
        """Copy the OCI layout to `<host>/<name>:<tag>`; the reference."""
        ref = f"{self.host}/{name}:{tag}"
        creds = ["--dest-creds", f"{self.username}:{self.password}"] if self.username else []
        done = subprocess.run(["skopeo", "copy", "--quiet", "--all", "--dest-tls-verify=false", *creds, f"oci:{layout}:x",
                               f"docker://{ref}"], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return ref


def registry_start(folder: Path, *, htpasswd: tuple | None = None) -> RegistryServer:
    """A registry keeping its blobs in `folder`; with `htpasswd` (user, password), behind basic auth."""
    port = _free_port()
    config = {"version": 0.1, "log": {"level": "error"},
              "storage": {"filesystem": {"rootdirectory": str(folder / "data")}, "delete": {"enabled": True}},
              "http": {"addr": f"127.0.0.1:{port}", "secret": "test-secret"}}
    if htpasswd:
        path = folder / "htpasswd"
        subprocess.run(["htpasswd", "-Bbc", str(path), *htpasswd], check=True, capture_output=True)
        config["auth"] = {"htpasswd": {"realm": "test-registry", "path": str(path)}}
    (folder / "config.yml").write_text(json.dumps(config))  # YAML reads JSON
    log = open(folder / "registry.log", "wb")
    process = subprocess.Popen(["docker-registry", "serve", str(folder / "config.yml")], stdout=log,
                               stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/v2/", timeout=1).status_code in (200, 401):
                break
        except httpx.HTTPError:
            time.sleep(0.1)
    else:
        process.kill()
        raise RuntimeError(f"docker-registry did not start: {(folder / 'registry.log').read_text()[-2000:]}")
    server = RegistryServer(f"127.0.0.1:{port}", process, *(htpasswd or ("", "")))
    return server


# -- OCI layouts --------------------------------------------------------------------------------------------------
def _entry(name: str, **fields) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.mtime, info.mode = 1700000000, fields.pop("mode", 0o644)
    for key, value in fields.items():
        setattr(info, key, value)
    return info


def layer(entries: list) -> bytes:
    """A gzipped tar from entries: (name, bytes) a file, (name, "dir") a folder, (name, "->", target) a symbolic
    link, (name, "=>", target) a hard link, (name, "chr") a character device, (name, bytes, mode) a file with a
    mode."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for item in entries:
            name = item[0]
            if item[1] == "dir":
                tar.addfile(_entry(name, type=tarfile.DIRTYPE, mode=0o755))
            elif item[1] == "->":
                tar.addfile(_entry(name, type=tarfile.SYMTYPE, linkname=item[2], mode=0o777))
            elif item[1] == "=>":
                tar.addfile(_entry(name, type=tarfile.LNKTYPE, linkname=item[2]))
            elif item[1] == "chr":
                tar.addfile(_entry(name, type=tarfile.CHRTYPE, devmajor=1, devminor=3, mode=0o666))
            else:
                data = item[1]
                tar.addfile(_entry(name, size=len(data), mode=item[2] if len(item) > 2 else 0o644), io.BytesIO(data))
    return gzip.compress(raw.getvalue(), mtime=0)


def busybox_layer(extra: list = ()) -> bytes:
    """/bin/busybox with `sh` linked to it, a /www with an index page, /etc/passwd."""
    return layer([("bin", "dir"), ("bin/busybox", Path("/bin/busybox").read_bytes(), 0o4755), ("bin/sh", "->", "busybox"),
                  ("etc", "dir"), ("etc/passwd", b"root:x:0:0:root:/root:/bin/sh\n"),
                  ("www", "dir"), ("www/index.html", b"hello from the image\n"), *extra])


def oci_layout(folder: Path, layers: list[bytes], config: dict, *, index: bool = False) -> Path:
    """An OCI image layout at `folder` (tag `x`) of these layers and this config ({"Cmd", "Env", ...}); with
    `index`, the manifest sits behind an image index (linux/amd64 and an arm64 entry)."""
    blobs = folder / "blobs" / "sha256"
    blobs.mkdir(parents=True)

    def put(data: bytes) -> dict:
        digest = hashlib.sha256(data).hexdigest()
        (blobs / digest).write_bytes(data)
        return {"digest": f"sha256:{digest}", "size": len(data)}

    diff_ids = [f"sha256:{hashlib.sha256(gzip.decompress(b)).hexdigest()}" for b in layers]
    config_blob = json.dumps({"architecture": "amd64", "os": "linux", "config": config,
                              "rootfs": {"type": "layers", "diff_ids": diff_ids}}).encode()
    manifest = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "config": {"mediaType": "application/vnd.oci.image.config.v1+json", **put(config_blob)},
                "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", **put(b)} for b in layers]}
    top = {"mediaType": "application/vnd.oci.image.manifest.v1+json", **put(json.dumps(manifest).encode())}
    if index:
        other = {"mediaType": "application/vnd.oci.image.manifest.v1+json", **top,
                 "platform": {"os": "linux", "architecture": "arm64"}}
        listed = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
                  "manifests": [other, {**top, "platform": {"os": "linux", "architecture": "amd64"}}]}
        top = {"mediaType": "application/vnd.oci.image.index.v1+json", **put(json.dumps(listed).encode())}
    (folder / "oci-layout").write_text('{"imageLayoutVersion": "1.0.0"}')
    (folder / "index.json").write_text(json.dumps({"schemaVersion": 2, "manifests": [
        {**top, "annotations": {"org.opencontainers.image.ref.name": "x"}}]}))
    return folder


HTTPD = {"Cmd": ["/bin/sh", "-c", "exec busybox httpd -f -p $PORT -h /www"], "Env": ["PATH=/bin", "GREETING=image"]}
