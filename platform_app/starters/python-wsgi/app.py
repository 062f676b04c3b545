"""A WSGI app using the standard library only; serves on $PORT."""
import json
import os
from wsgiref.simple_server import make_server


def application(environ, start_response):
    if environ.get("PATH_INFO") == "/health":
        body = json.dumps({"status": "ok"}).encode()
        start_response("200 OK", [("Content-Type", "application/json")])
        return [body]
    start_response("200 OK", [("Content-Type", "text/plain; charset=utf-8")])
    return [b"Hello from a Python WSGI app\n"]


if __name__ == "__main__":
    port = int(os.environ.get("PORT", "8000"))
    with make_server("0.0.0.0", port, application) as server:
        server.serve_forever()
