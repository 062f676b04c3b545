"""Real local peers for tests, on loopback only: a Git server over HTTP and a DNS server.

`GitHttpServer` serves repositories with git's smart HTTP protocol: `git http-backend` runs as a CGI
behind a small threaded `http.server`. `serve(path)` publishes a repository (bare or not) and returns
its URL. `DnsServer` answers A/AAAA records from a dict (dnslib), everything else NXDOMAIN.
"""
import os
import secrets
import socket
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from dnslib import AAAA, QTYPE, RCODE, RR, A
from dnslib.server import DNSLogger, DNSServer


class _GitHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        self._cgi()

    def do_POST(self):
        self._cgi()

    def log_message(self, *args):  # quiet
        pass

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = b""
            while True:
                size = int(self.rfile.readline().strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _cgi(self):
        self.server.requests.append((self.command, self.path, dict(self.headers)))
        path, _, query = self.path.partition("?")
        alias, _, rest = path.lstrip("/").partition("/")
        repo = self.server.repos.get(alias.removesuffix(".git"))
        body = self._body()
        if repo is None:
            return self._answer(404, {"Content-Type": "text/plain"}, b"no such repository\n")
        env = {"PATH": os.environ["PATH"], "GIT_PROJECT_ROOT": str(repo.parent), "GIT_HTTP_EXPORT_ALL": "1",
               "GIT_CONFIG_NOSYSTEM": "1", "HOME": os.environ.get("HOME", "/tmp"),
               "REQUEST_METHOD": self.command, "PATH_INFO": f"/{repo.name}/{rest}", "QUERY_STRING": query,
               "CONTENT_TYPE": self.headers.get("Content-Type", ""), "CONTENT_LENGTH": str(len(body)),
               "REMOTE_ADDR": self.client_address[0], "GIT_PROTOCOL": self.headers.get("Git-Protocol", ""),
               "HTTP_CONTENT_ENCODING": self.headers.get("Content-Encoding", "")}
        out = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True).stdout
        head, _, payload = out.partition(b"\r\n\r\n")
        status, headers = 200, {}
        for line in head.decode("latin-1").split("\r\n"):
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = int(value.split()[0])
            elif name:
                headers[name] = value.strip()
        self._answer(status, headers, payload)

    def _answer(self, status: int, headers: dict, payload: bytes):
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


class GitHttpServer:
    def __init__(self, host: str = "127.0.0.1"):
        self.httpd = ThreadingHTTPServer((host, 0), _GitHandler)
        self.httpd.daemon_threads = True
        self.httpd.repos, self.httpd.requests = {}, []
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def requests(self) -> list:
        return self.httpd.requests

    def serve(self, repo: Path, name: str | None = None) -> str:
        alias = name or f"r{secrets.token_hex(6)}"
        self.httpd.repos[alias] = Path(repo)
        return f"{self.base}/{alias}.git"

    def start(self):
        self.thread.start()
        return self

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


class _Zone:
    def __init__(self, records: dict):
        self.records = records  # name -> ["127.0.0.1", "::1", ...]
        self.queries = []

    def resolve(self, request, handler):
        reply = request.reply()
        name, qtype = str(request.q.qname).rstrip(".").lower(), QTYPE[request.q.qtype]
        self.queries.append((name, qtype))
        if name not in self.records:
            reply.header.rcode = RCODE.NXDOMAIN
            return reply
        for address in self.records[name]:
            if qtype == "A" and ":" not in address:
                reply.add_answer(RR(request.q.qname, QTYPE.A, rdata=A(address), ttl=0))
            elif qtype == "AAAA" and ":" in address:
                reply.add_answer(RR(request.q.qname, QTYPE.AAAA, rdata=AAAA(address), ttl=0))
        return reply


class DnsServer:
    """UDP on a free loopback port; `records` may be changed while it runs."""

    def __init__(self, records: dict | None = None):
        self.zone = _Zone(records if records is not None else {})
        self.server = DNSServer(self.zone, address="127.0.0.1", port=0,
                                logger=DNSLogger("-request,-reply,-truncated,-error,-recv,-send,-data", False))

    @property
    def records(self) -> dict:
        return self.zone.records

    @property
    def address(self) -> str:
        return "127.0.0.1:%d" % self.server.server.server_address[1]

    def start(self):
        self.server.start_thread()
        return self

    def stop(self):
        self.server.stop()
        self.server.server.server_close()


class SilentListener:
    """A TCP port on loopback that never accepts: its queue is filled at once, so a connection attempt
    gets no answer at all (what a blackholed address does)."""

    def __init__(self, host: str = "127.0.0.1"):
        self.sock = socket.socket()
        self.sock.bind((host, 0))
        self.sock.listen(0)
        self.fillers = []
        for _ in range(2):  # occupy the accept queue; later handshakes are dropped
            filler = socket.socket()
            filler.setblocking(False)
            filler.connect_ex(self.sock.getsockname())
            self.fillers.append(filler)

    @property
    def url(self) -> str:
        host, port = self.sock.getsockname()
        return f"http://{host}:{port}"

    def close(self):
        for filler in self.fillers:
            filler.close()
        self.sock.close()
