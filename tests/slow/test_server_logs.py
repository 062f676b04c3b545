"""The production server as `Procfile` starts it (gunicorn -c config/gunicorn.py, uvicorn workers), read from its
own log: stream tokens and deploy-hook secrets never appear in it, and a forged X-Forwarded-For from loopback does
not change the client address it records."""
import secrets

import httpx
import pytest

from tests.processes import LOOPBACK, PYTHON, Process, child_env, free_port, manage, wait_until

pytestmark = pytest.mark.slow


def test_the_server_log_holds_no_tokens_and_no_forged_addresses(tmp_path):
    env = child_env(data_dir=tmp_path / "data")
    manage(env, "migrate", "--noinput")
    port = free_port()
    web = Process("web", [PYTHON, "-m", "gunicorn", "config.asgi:application", "-c", "config/gunicorn.py"],
                  env={**env, "WEB_BIND": f"{LOOPBACK}:{port}", "WEB_CONCURRENCY": "1"}, log_dir=tmp_path).start()
    base = f"http://{LOOPBACK}:{port}"
    stream_token = "eyJ" + secrets.token_urlsafe(40)
    hook_secret = "dh_" + secrets.token_urlsafe(32)
    try:
        def up():
            try:
                return httpx.get(f"{base}/health", timeout=5).status_code == 200
            except httpx.HTTPError:
                return False

        wait_until(up, timeout=120, what="the server to answer /health", logs=[web])
        stream = httpx.get(f"{base}/v1/orgs/acme/deployments/dpl_x/logs/stream?lastEventId=3&token={stream_token}")
        assert stream.status_code == 401
        assert httpx.get(f"{base}/v1/hooks/deploy/{hook_secret}").status_code == 405
        assert httpx.post(f"{base}/v1/hooks/deploy/{hook_secret}").status_code == 404
        httpx.get(f"{base}/health?forged=1", headers={"X-Forwarded-For": "203.0.113.9"})
        wait_until(lambda: "/health?forged=1" in web.log_text(), timeout=30, what="the access line", logs=[web])
    finally:
        web.stop()
    log = web.log_text()
    assert stream_token not in log and hook_secret not in log
    assert "/logs/stream?lastEventId=3&token=[redacted]" in log
    assert "/v1/hooks/deploy/[redacted]" in log  # the access lines and Django's "Method Not Allowed: ..."
    forged = next(line for line in log.splitlines() if "/health?forged=1" in line)
    assert "203.0.113.9" not in forged and f"{LOOPBACK}:" in forged
