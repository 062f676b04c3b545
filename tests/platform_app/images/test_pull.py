"""A node's pull against a real registry (docker-registry on loopback, images pushed by skopeo): the index, the
linux/amd64 manifest, the layers checked and applied with whiteouts and the archive rules, the cache, the bounds,
the guard, the credentials; and the image's command run in the sandbox with its root as `/`."""
import os
import stat

import pytest

from platform_app.nodes import oci
from platform_app.nodes.images import ImageCache, ImageError
from platform_app.sandbox import ImageRoot, Limits, Network
from platform_app.sandbox.runners import BubblewrapRunner
from tests.platform_app.images.registry import HTTPD, busybox_layer, layer, oci_layout

LOOPBACK = oci.node_check(networks=["127.0.0.0/8"], allow_http=True)
BIG = 10 ** 9


def _forbidden(url):
    raise AssertionError(f"the registry was asked for {url}")


def _pushed(registry, tmp_path, name, layers, config=HTTPD, tag="v1", index=False):
    ref = registry.push(oci_layout(tmp_path / f"{name}-{tag}", layers, config, index=index), name, tag)
    return ref, oci.resolve(oci.Reference.parse(ref), check=LOOPBACK, max_bytes=BIG, max_layers=10)


def _run(pulled, script: str, tmp_path) -> str:
    image = pulled.image_root()
    proc = BubblewrapRunner().run("", workdir=tmp_path, scratch=tmp_path / "scratch", env={"FROM_PROJECT": "yes"},
                                  limits=Limits(memory_mb=256, processes=64, disk_mb=64),
                                  network=Network(egress=False),
                                  image=ImageRoot(image.root, ("/bin/sh", "-c", script), image.uid, image.gid,
                                                  image.cwd))
    try:
        proc.wait(20)
        return proc.stdout.read().decode()
    finally:
        proc.close()


WHITEOUT_LAYER = [("gone", b"removed by the next layer"), ("keep", "dir"), ("keep/old", b"lower"),
                  ("etc/shadow-lower", b"the image's own")]
OVER_LAYER = [(".wh.gone", b""), ("keep/.wh..wh..opq", b""), ("keep/new", b"upper"),
              ("etc/passwd", b"root:x:0:0:replaced:/:/bin/sh\n"),
              ("shadow", "->", "/etc/shadow"), ("deep", "dir"), ("deep/up", "->", "/../../etc/shadow"),
              ("escape", "->", "../../../../etc/shadow"), ("null", "chr"), ("bb", "=>", "bin/busybox")]


def test_two_layers_apply_in_order_with_whiteouts_and_nothing_leads_outside_the_root(registry, tmp_path):
    ref, resolved = _pushed(registry, tmp_path, "rules", [busybox_layer(WHITEOUT_LAYER), layer(OVER_LAYER)],
                            index=True)
    assert resolved["layers"] == 2 and resolved["digest"] != resolved["manifestDigest"]  # an index, then amd64
    cache = ImageCache(tmp_path / "cache", max_bytes=BIG)
    pulled = cache.pull({"reference": ref, "digest": resolved["digest"]}, check=LOOPBACK, max_bytes=BIG,
                        max_layers=10)
    root = pulled.root / "rootfs"
    assert not (root / "gone").exists()                                    # `.wh.gone`
    assert sorted(os.listdir(root / "keep")) == ["new"]                    # `.wh..wh..opq`: the lower's gone
    assert (root / "etc/passwd").read_bytes() == b"root:x:0:0:replaced:/:/bin/sh\n"  # replaced by the upper
    assert os.readlink(root / "shadow") == "etc/shadow"                    # absolute: rewritten inside the root
    assert os.readlink(root / "deep/up") == "../etc/shadow"
    assert not os.path.lexists(root / "escape") and not os.path.lexists(root / "null")
    assert stat.S_IMODE((root / "bin/busybox").stat().st_mode) == 0o755    # set-uid dropped
    assert (root / "bb").stat().st_ino == (root / "bin/busybox").stat().st_ino  # the hard link, inside
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            assert os.path.realpath(os.path.join(folder, name)).startswith(str(root.resolve()))
    log = "\n".join(pulled.lines)
    assert "null: a device or fifo, skipped" in log and "escape: a link to ../../../../etc/shadow" in log
    assert f"at {resolved['digest']}" in log and log.count(": fetched") == 3  # config and two layers

    seen = _run(pulled, "id -u; cat /shadow || echo NO-SHADOW; cat /deep/up || echo NO-UP; ls /keep; "
                        "cat /etc/shadow-lower; echo $FROM_PROJECT; touch /written 2>&1; echo ok > /tmp/t && "
                        "cat /tmp/t; ls /usr /home 2>&1", tmp_path)
    assert "NO-SHADOW" in seen and "NO-UP" in seen and "the image's own" in seen and "yes" in seen
    assert "Read-only file system" in seen and "\nok\n" in seen
    assert "No such file or directory" in seen.split("ok\n", 1)[1]  # nothing of the node: no /usr, no /home
    assert "root:" not in seen.replace("root:x:0:0:replaced", "")


def test_the_config_user_and_workdir_run_as_given(registry, tmp_path):
    config = {"Entrypoint": ["/bin/sh", "-c"], "Cmd": ["id -u; id -g; pwd; echo $GREETING"], "User": "1234:99",
              "WorkingDir": "/srv/app", "Env": ["PATH=/bin", "GREETING=from-the-config"]}
    ref, resolved = _pushed(registry, tmp_path, "user", [busybox_layer()], config=config)
    pulled = ImageCache(tmp_path / "cache", max_bytes=BIG).pull(
        {"reference": ref, "digest": resolved["digest"]}, check=LOOPBACK, max_bytes=BIG, max_layers=10)
    image = pulled.image_root()
    assert image.argv == ("/bin/sh", "-c", "id -u; id -g; pwd; echo $GREETING") and (image.uid, image.gid) == (1234, 99)
    proc = BubblewrapRunner().run("", workdir=tmp_path, scratch=tmp_path / "s", env=pulled.env(), limits=Limits(),
                                  network=Network(egress=False), image=image)
    proc.wait(20)
    assert proc.stdout.read().decode().split() == ["1234", "99", "/srv/app", "from-the-config"]
    proc.close()
    assert pulled.env() == {"PATH": "/bin", "GREETING": "from-the-config"}


def test_a_second_pull_asks_the_registry_nothing_and_a_shared_layer_is_not_fetched_again(registry, tmp_path):
    ref, resolved = _pushed(registry, tmp_path, "cached", [busybox_layer()])
    cache = ImageCache(tmp_path / "cache", max_bytes=BIG)
    spec = {"reference": ref, "digest": resolved["digest"]}
    cache.pull(spec, check=LOOPBACK, max_bytes=BIG, max_layers=10)
    again = cache.pull(spec, check=_forbidden, max_bytes=BIG, max_layers=10)  # any request would fail the test
    assert "its root filesystem is cached on this node" in again.lines[0] and again.lines[1].endswith(": cached")
    other_ref, other = _pushed(registry, tmp_path, "sharing", [busybox_layer(), layer([("extra", b"x")])])
    shared = cache.pull({"reference": other_ref, "digest": other["digest"]}, check=LOOPBACK, max_bytes=BIG,
                        max_layers=10)
    layer_lines = [line for line in shared.lines if line.strip().startswith("layer") and ":" in line[20:]]
    assert [line.rsplit(": ", 1)[1].split()[0] for line in layer_lines if "applied" not in line] == ["cached", "fetched"]


def test_the_cache_evicts_the_least_recently_used_but_never_what_runs(registry, tmp_path):
    ref_a, a = _pushed(registry, tmp_path, "evict-a", [layer([("a", os.urandom(300_000))])], config={"Cmd": ["x"]})
    ref_b, b = _pushed(registry, tmp_path, "evict-b", [layer([("b", os.urandom(300_000))])], config={"Cmd": ["x"]})
    cache = ImageCache(tmp_path / "cache", max_bytes=1_000_000)
    cache.pull({"reference": ref_a, "digest": a["digest"]}, check=LOOPBACK, max_bytes=BIG, max_layers=10)
    cache.in_use.add(a["digest"])
    cache.pull({"reference": ref_b, "digest": b["digest"]}, check=LOOPBACK, max_bytes=BIG, max_layers=10)
    assert cache.root(a["digest"]).exists() and cache.root(b["digest"]).exists()  # A runs: its root stays
    assert sum(e[1] for e in cache.entries()) <= 1_000_000
    cache.in_use.clear()
    cache.max_bytes = 700_000
    removed = cache.evict()
    assert a["digest"].partition(":")[2] in removed and cache.root(b["digest"]).exists()  # A was used least lately


def test_an_image_over_the_bounds_is_refused_naming_the_limit(registry, tmp_path):
    ref, resolved = _pushed(registry, tmp_path, "zeros", [busybox_layer(), layer([("zeros", b"\0" * 3_000_000)])])
    spec = {"reference": ref, "digest": resolved["digest"]}
    with pytest.raises(ImageError, match=r"over the image's IMAGE_MAX_BYTES|over IMAGE_MAX_BYTES \(500000\)"):
        ImageCache(tmp_path / "c1", max_bytes=BIG).pull(spec, check=LOOPBACK, max_bytes=500_000, max_layers=10)
    # compressed it fits (about 1 MB of busybox), unpacked it does not (busybox and 3 MB of zeros)
    with pytest.raises(ImageError, match=r"larger than 4000000 bytes unpacked: over IMAGE_MAX_BYTES"):
        ImageCache(tmp_path / "c2", max_bytes=BIG).pull(spec, check=LOOPBACK, max_bytes=4_000_000, max_layers=10)
    with pytest.raises(ImageError, match=r"has 2 layers: over IMAGE_MAX_LAYERS \(1\)"):
        ImageCache(tmp_path / "c3", max_bytes=BIG).pull(spec, check=LOOPBACK, max_bytes=BIG, max_layers=1)
    assert not list((tmp_path / "c2" / "roots").iterdir())  # nothing half-built is kept


def test_the_guard_decides_every_registry_address(registry, tmp_path):
    ref, resolved = _pushed(registry, tmp_path, "guarded", [busybox_layer()])
    for check in (oci.node_check(allow_http=True),                                 # loopback not opened
                  oci.node_check(networks=["127.0.0.0/8"], allow_http=False)):      # plain http not allowed
        with pytest.raises(ImageError, match="cannot be reached from the platform"):
            ImageCache(tmp_path / "c", max_bytes=BIG).pull({"reference": ref, "digest": resolved["digest"]},
                                                          check=check, max_bytes=BIG, max_layers=10)
    with pytest.raises(oci.RegistryError, match="cannot be reached"):
        oci.resolve(oci.Reference.parse("169.254.169.254/x:1"), check=oci.node_check(networks=["0.0.0.0/0"],
                                                                                       allow_http=True),
                    max_bytes=BIG, max_layers=10)


def test_credentials_go_as_the_registry_asks_and_a_refusal_is_its_answer(private_registry, tmp_path):
    ref = private_registry.push(oci_layout(tmp_path / "p", [busybox_layer()], HTTPD), "private", "v1")
    reference = oci.Reference.parse(ref)
    with pytest.raises(oci.RegistryError, match=r"asks for credentials \(the project has none\): 401 Unauthorized "
                                                r"\(UNAUTHORIZED: authentication required\)"):
        oci.resolve(reference, check=LOOPBACK, max_bytes=BIG, max_layers=10)
    with pytest.raises(oci.RegistryError, match=r"refused the credentials: 401 Unauthorized \(UNAUTHORIZED"):
        oci.resolve(reference, check=LOOPBACK, username="deployer", password="wrong", max_bytes=BIG, max_layers=10)
    resolved = oci.resolve(reference, check=LOOPBACK, username="deployer", password="s3cret-pass", max_bytes=BIG,
                           max_layers=10)
    pulled = ImageCache(tmp_path / "cache", max_bytes=BIG).pull(
        {"reference": ref, "digest": resolved["digest"], "username": "deployer", "password": "s3cret-pass"},
        check=LOOPBACK, max_bytes=BIG, max_layers=10)
    assert (pulled.root / "rootfs/www/index.html").read_bytes() == b"hello from the image\n"


def _layout_blob(layout, digest: str) -> bytes:
    return (layout / "blobs" / "sha256" / digest.partition(":")[2]).read_bytes()


def test_a_bearer_token_is_asked_from_the_realm_and_blobs_follow_a_redirect_without_credentials(tmp_path):
    """A registry in front of a token service and blob storage (as Docker Hub and GHCR are), played by two local
    HTTP servers: the challenge's realm gets the credentials, the registry the token, the storage neither."""
    import json
    import re

    from pytest_httpserver import HTTPServer
    from werkzeug import Response

    layout = oci_layout(tmp_path / "l", [busybox_layer()], HTTPD, index=True)
    top = json.loads((layout / "index.json").read_text())["manifests"][0]
    registry, storage = HTTPServer(host="127.0.0.1"), HTTPServer(host="127.0.0.1")
    registry.start()
    storage.start()
    seen = {"token": [], "storage": []}
    try:
        realm = registry.url_for("/token")

        def token(request):
            seen["token"].append((request.headers.get("Authorization"), dict(request.args)))
            if request.headers.get("Authorization") != "Basic ZGVwbG95ZXI6cGFzcw==":  # deployer:pass
                return Response('{"errors":[{"code":"DENIED","message":"bad user"}]}', status=401)
            return Response(json.dumps({"token": "tok-123"}), content_type="application/json")

        def v2(request):
            if request.headers.get("Authorization") != "Bearer tok-123":
                return Response('{"errors":[{"code":"UNAUTHORIZED","message":"token needed"}]}', status=401,
                                headers={"WWW-Authenticate": f'Bearer realm="{realm}",service="reg.test",'
                                                             f'scope="repository:team/app:pull"'})
            kind, ref = re.match(r"^/v2/team/app/(manifests|blobs)/(.+)$", request.path).groups()
            if kind == "blobs":
                return Response(status=307, headers={"Location": storage.url_for(f"/b/{ref}")})
            digest = top["digest"] if ref == "v1" else ref
            return Response(_layout_blob(layout, digest), headers={"Content-Type": json.loads(
                _layout_blob(layout, digest)).get("mediaType", "")})

        def blob(request):
            seen["storage"].append(request.headers.get("Authorization"))
            return Response(_layout_blob(layout, request.path.rsplit("/", 1)[1]))

        registry.expect_request("/token").respond_with_handler(token)
        registry.expect_request(re.compile(r"^/v2/.*")).respond_with_handler(v2)
        storage.expect_request(re.compile(r"^/b/.*")).respond_with_handler(blob)
        ref = f"127.0.0.1:{registry.port}/team/app:v1"
        with pytest.raises(oci.RegistryError, match=r"token service refused: 401 UNAUTHORIZED \(DENIED: bad user\)"):
            oci.resolve(oci.Reference.parse(ref), check=LOOPBACK, username="deployer", password="wrong",
                        max_bytes=BIG, max_layers=10)
        resolved = oci.resolve(oci.Reference.parse(ref), check=LOOPBACK, username="deployer", password="pass",
                               max_bytes=BIG, max_layers=10)
        assert resolved["digest"] == top["digest"]
        assert seen["token"][-1] == ("Basic ZGVwbG95ZXI6cGFzcw==", {"service": "reg.test",
                                                                     "scope": "repository:team/app:pull"})
        pulled = ImageCache(tmp_path / "cache", max_bytes=BIG).pull(
            {"reference": ref, "digest": resolved["digest"], "username": "deployer", "password": "pass"},
            check=LOOPBACK, max_bytes=BIG, max_layers=10)
        assert (pulled.root / "rootfs/www/index.html").exists()
        assert len(seen["storage"]) == 2 and seen["storage"] == [None, None]  # the config and the layer, no token
    finally:
        registry.clear()
        registry.stop()
        storage.stop()


def test_an_images_command_reaches_nothing_of_the_node(registry, tmp_path, settings):
    """The sandbox suite's escapes, tried by an image's own shell (busybox): the platform's key files, the node's
    processes and variables, loopback services directly and through the egress proxy."""
    import socket

    ref, resolved = _pushed(registry, tmp_path, "probe", [busybox_layer()])
    pulled = ImageCache(tmp_path / "cache", max_bytes=BIG).pull({"reference": ref, "digest": resolved["digest"]},
                                                                check=LOOPBACK, max_bytes=BIG, max_layers=10)
    listener = socket.create_server(("127.0.0.1", 0))  # a service of the node, on its loopback
    port = listener.getsockname()[1]
    keys = " ".join(str(settings.DATA_DIR / name) for name in ("jwt-private.pem", "env-encryption-key",
                                                                "django-secret-key"))
    script = (f"for f in {keys} /etc/shadow ../../etc/hostname; do cat $f >/dev/null 2>&1 && echo READ $f; done; "
              "echo ROOT $(ls /); echo PROCS $(ls /proc | grep -c '^[0-9]'); "
              "echo ENV $(tr '\\0' ' ' < /proc/1/environ); "
              f"nc -w 2 127.0.0.1 {port} </dev/null && echo CONNECTED-DIRECT; "
              f"printf 'CONNECT 127.0.0.1:{port} HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n' | nc -w 3 127.0.0.1 3128 | head -1; "
              "printf 'CONNECT 169.254.169.254:80 HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n' | nc -w 3 127.0.0.1 3128 | head -1")
    image = pulled.image_root()
    proc = BubblewrapRunner().run("", workdir=tmp_path, scratch=tmp_path / "s", env={"PATH": "/bin"},
                                  limits=Limits(), network=Network(egress=True),
                                  image=ImageRoot(image.root, ("/bin/sh", "-c", script), image.uid, image.gid, "/"))
    try:
        proc.wait(30)
        seen = proc.stdout.read().decode()
    finally:
        proc.close()
        listener.close()
    assert "READ" not in seen and "CONNECTED-DIRECT" not in seen
    assert "ROOT bin dev etc proc tmp www" in seen
    assert int(seen.split("PROCS ")[1].split()[0]) <= 6  # its own shell and pipeline, nothing of the node
    environ = seen.split("ENV ")[1].splitlines()[0]
    assert "SECRET_KEY" not in environ and "DATABASE_URL" not in environ and "HTTP_PROXY=" in environ
    assert seen.count("HTTP/1.1 403") == 2, seen
