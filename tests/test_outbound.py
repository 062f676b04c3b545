"""The outbound guard itself (`config/outbound.py`) against real local peers: pytest-httpserver on
127.0.0.2 stands for a server outside, a dnslib server answers the names. Nothing leaves loopback."""
import datetime
import ssl

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Response

from config.outbound import UNREACHABLE, OutboundRefused, outbound_check, outbound_request
from tests.local_servers import SilentListener

# Every way of writing 127.0.0.1 that resolvers, curl, git or browsers accept.
LOOPBACK_NOTATIONS = ["127.0.0.1", "[::1]", "0x7f.1", "0x7f000001", "2130706433", "0177.0.0.1", "127.1",
                      "127.0.0.1.", "0x7F.0.0.1", "127.000.000.001", "[::ffff:127.0.0.1]", "[::ffff:7f00:1]",
                      "[0:0:0:0:0:ffff:127.0.0.1]", "[::127.0.0.1]", "[2002:7f00:1::]", "[64:ff9b::7f00:1]",
                      "[::ffff:0:127.0.0.1]", "127\u30020\u30020\u30021", "[0:0:0:0:0:0:0:1]"]
# Inside addresses of every kind; refused before any packet is sent.
INSIDE = ["0.0.0.0", "0", "[::]", "10.0.0.1", "172.16.0.1", "192.168.1.1", "100.64.0.1", "169.254.169.254",
          "169.254.170.2", "[fd00:ec2::254]", "[fe80::1]", "[fc00::1]", "224.0.0.1", "[ff02::1]",
          "255.255.255.255", "240.0.0.1", "198.18.0.1", "[2002:a00:1::]", "[64:ff9b::a9fe:a9fe]",
          "metadata.google.internal", "localhost", "app.localhost"]


@pytest.fixture
def peer():
    server = HTTPServer(host="127.0.0.2", port=0)
    server.start()
    yield server
    server.clear()
    server.stop()


@pytest.fixture(scope="module")
def loopback_server():
    """A live server on 127.0.0.1 that the refused URLs point at: it must never hear from them."""
    server = HTTPServer(host="127.0.0.1", port=0)
    server.start()
    yield server
    server.stop()


@pytest.fixture
def inner(loopback_server):
    loopback_server.clear()
    loopback_server.expect_request("/").respond_with_data("secret inside")
    yield loopback_server
    loopback_server.clear()


@pytest.fixture
def inside(settings):
    """No private network allowed: loopback counts as inside, as in production."""
    settings.OUTBOUND_ALLOWED_NETWORKS = []


def refused(url, **kwargs) -> OutboundRefused:
    with pytest.raises(OutboundRefused) as caught:
        outbound_request("GET", url, purpose="test", **kwargs)
    assert caught.value.message == UNREACHABLE and caught.value.status == 400
    return caught.value


@pytest.mark.parametrize("host", LOOPBACK_NOTATIONS)
def test_every_notation_of_loopback_is_refused_and_nothing_is_sent(host, inner, settings):
    settings.OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.2/32"]  # the peer's address only, not 127.0.0.1
    assert refused(f"http://{host}:{inner.port}/").code == "url_not_allowed"
    assert inner.log == []


@pytest.mark.parametrize("host", INSIDE)
def test_inside_addresses_are_refused(host, inside):
    refused(f"http://{host}/latest/meta-data/")


@pytest.mark.parametrize("url", ["ftp://127.0.0.2/", "file:///etc/passwd", "gopher://127.0.0.2/", "git://127.0.0.2/x",
                                 "http://user:pw@127.0.0.2/", "http://127.0.0.2@127.0.0.2/", "http:///x",
                                 "http://127.0.0.2:0/", "http://[fe80::1%25lo]/", "http://exa mple.test/",
                                 "http://1.2.3.4.5/", "http://256.0.0.1/", "http://08.0.0.1/", "//127.0.0.2/x", ""])
def test_malformed_or_odd_urls_are_refused(url, settings):
    settings.OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.2/32"]
    refused(url)


def test_allowed_network_is_reached_with_the_body(peer, settings):
    settings.OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.2/32"]
    peer.expect_request("/hello").respond_with_data("hi there")
    resp = outbound_request("GET", peer.url_for("/hello"), purpose="test")
    assert (resp.status_code, resp.content, resp.url) == (200, b"hi there", peer.url_for("/hello"))


def test_plain_http_only_where_allowed(peer, settings):
    settings.OUTBOUND_ALLOWED_NETWORKS, settings.OUTBOUND_ALLOW_HTTP = ["127.0.0.2/32"], False
    peer.expect_request("/").respond_with_data("x")
    refused(peer.url_for("/"))
    assert peer.log == []


def test_a_name_resolving_inside_is_refused(dns_server, inside, peer):
    dns_server.records["rebind.example.test"] = ["127.0.0.2"]
    dns_server.records["v6.example.test"] = ["::1"]
    refused(f"http://rebind.example.test:{peer.port}/")
    refused(f"http://v6.example.test:{peer.port}/")
    refused("http://missing.example.test/")  # NXDOMAIN: the same answer
    assert peer.log == []


def test_one_bad_address_among_good_ones_refuses_the_name(dns_server, peer, settings):
    settings.OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.2/32"]
    dns_server.records["mixed.example.test"] = ["127.0.0.2", "10.1.2.3"]
    refused(f"http://mixed.example.test:{peer.port}/")
    assert peer.log == []


def test_a_name_is_resolved_once_and_sent_as_host(dns_server, peer, settings):
    settings.OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.2/32"]
    dns_server.records["git.example.test"] = ["127.0.0.2"]
    peer.expect_request("/x").respond_with_data("named")
    resp = outbound_request("GET", f"http://git.example.test:{peer.port}/x", purpose="test")
    assert resp.content == b"named" and resp.url == f"http://git.example.test:{peer.port}/x"
    request, _ = peer.log[0]
    assert request.headers["Host"] == f"git.example.test:{peer.port}"
    assert [q for q in dns_server.zone.queries if q == ("git.example.test", "A")] == [("git.example.test", "A")]


def test_an_unanswering_resolver_gives_the_same_answer(settings, inside):
    listener = SilentListener()  # nothing answers UDP there either
    settings.OUTBOUND_DNS_SERVERS = [listener.url.removeprefix("http://")]
    settings.OUTBOUND_DNS_TIMEOUT_SECONDS = 0.3
    try:
        refused("https://git.example.test/acme/site.git")
    finally:
        listener.close()


@pytest.mark.parametrize("location", ["http://127.0.0.1:{port}/", "http://169.254.169.254/latest/meta-data/",
                                      "http://[::1]:{port}/", "http://0x7f.1:{port}/", "file:///etc/passwd",
                                      "gopher://127.0.0.2:{port}/"])
def test_a_redirect_inside_is_refused(location, peer, inner, settings):
    settings.OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.2/32"]
    peer.expect_request("/go").respond_with_response(
        Response(status=302, headers={"Location": location.format(port=inner.port)}))
    refused(peer.url_for("/go"))
    assert len(peer.log) == 1 and inner.log == []


def test_redirects_are_followed_to_an_allowed_place_and_bounded(peer, settings):
    settings.OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.2/32"]
    for i in range(7):
        peer.expect_request(f"/hop{i}").respond_with_response(
            Response(status=302, headers={"Location": f"/hop{i + 1}"}))
    peer.expect_request("/hop7").respond_with_data("arrived")
    resp = outbound_request("GET", peer.url_for("/hop2"), purpose="test")  # 5 redirects: the limit
    assert resp.content == b"arrived" and resp.url == peer.url_for("/hop7") and len(resp.history) == 5
    refused(peer.url_for("/hop1"))  # 6 redirects


def test_credentials_do_not_follow_a_redirect_to_another_origin(peer, settings):
    settings.OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    other = HTTPServer(host="127.0.0.3", port=0)
    other.expect_request("/there").respond_with_data("ok")
    other.start()
    try:
        peer.expect_request("/here").respond_with_response(
            Response(status=307, headers={"Location": other.url_for("/there")}))
        resp = outbound_request("GET", peer.url_for("/here"), purpose="test", headers={"Authorization": "Bearer s"})
        assert resp.content == b"ok"
        assert peer.log[0][0].headers.get("Authorization") == "Bearer s"
        assert "Authorization" not in other.log[0][0].headers
    finally:
        other.stop()


def test_the_response_size_is_capped(peer, settings):
    settings.OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.2/32"]
    peer.expect_request("/big").respond_with_data("x" * 5000)
    assert refused(peer.url_for("/big"), max_bytes=1000).code == "response_too_large"
    assert outbound_request("GET", peer.url_for("/big"), purpose="test", max_bytes=5000).content == b"x" * 5000


def test_an_unanswering_address_does_not_hang(settings):
    settings.OUTBOUND_CONNECT_TIMEOUT_SECONDS, settings.OUTBOUND_TIMEOUT_SECONDS = 0.3, 1.0
    listener = SilentListener()  # 127.0.0.1 is allowed by the test settings
    try:
        refused(listener.url + "/")
    finally:
        listener.close()


def _certificate(tmp_path, name: str):
    """A CA and a server certificate for `name`, as files (the CA is what OUTBOUND_CA_BUNDLE trusts)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Test CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(1).not_valid_before(now - datetime.timedelta(hours=1))
          .not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True).sign(ca_key, hashes.SHA256()))
    cert = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(2)
            .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    pem = serialization.Encoding.PEM
    (tmp_path / "ca.pem").write_bytes(ca.public_bytes(pem))
    (tmp_path / "cert.pem").write_bytes(cert.public_bytes(pem))
    (tmp_path / "key.pem").write_bytes(key.private_bytes(pem, serialization.PrivateFormat.PKCS8,
                                                          serialization.NoEncryption()))
    return tmp_path / "ca.pem", tmp_path / "cert.pem", tmp_path / "key.pem"


def test_tls_is_verified_on_the_name_while_connecting_to_the_checked_address(tmp_path, dns_server, settings):
    ca, cert, key = _certificate(tmp_path, "git.example.test")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server = HTTPServer(host="127.0.0.2", port=0, ssl_context=context)
    server.expect_request("/").respond_with_data("over tls")
    server.start()
    settings.OUTBOUND_ALLOWED_NETWORKS, settings.OUTBOUND_CA_BUNDLE = ["127.0.0.2/32"], str(ca)
    dns_server.records.update({"git.example.test": ["127.0.0.2"], "other.example.test": ["127.0.0.2"]})
    try:
        resp = outbound_request("GET", f"https://git.example.test:{server.port}/", purpose="test")
        assert resp.content == b"over tls"
        refused(f"https://other.example.test:{server.port}/")  # the certificate does not name it
        refused(f"https://127.0.0.2:{server.port}/")  # nor the address
        settings.OUTBOUND_CA_BUNDLE = ""
        refused(f"https://git.example.test:{server.port}/")  # an untrusted issuer
    finally:
        server.stop()


def test_check_keeps_the_name_and_every_checked_address(dns_server, settings):
    settings.OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    dns_server.records["two.example.test"] = ["127.0.0.2", "127.0.0.3"]
    target = outbound_check("https://Two.Example.Test:8443/a?b=1", purpose="test")
    assert (target.host, target.port, target.addresses) == ("two.example.test", 8443, ("127.0.0.2", "127.0.0.3"))
    assert target.host_header == "two.example.test:8443"
    assert target.url_for("127.0.0.3") == "https://127.0.0.3:8443/a?b=1"
