"""svc's errors without a platform: not signed in (exit 2), server down (exit 1), never a traceback."""
import json
import subprocess
import sys

from click.testing import CliRunner

from platform_app.cli.main import cli


def test_not_signed_in_is_exit_2_with_a_clear_message(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.delenv("SVC_TOKEN", raising=False)
    result = CliRunner().invoke(cli, ["--api", "http://127.0.0.1:9", "whoami"])
    assert result.exit_code == 2
    assert "Not signed in" in result.output and "Traceback" not in result.output


def test_server_down_is_exit_1_and_json_on_request(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    result = CliRunner().invoke(cli, ["whoami", "--api", "http://127.0.0.1:9", "--token", "svc_x", "--json"])
    assert result.exit_code == 1
    assert json.loads(result.output.strip().splitlines()[-1])["error"]["code"] == "unreachable"


def test_the_client_loads_no_django(tmp_path):
    code = "import sys, platform_app.cli.main; print([m for m in sys.modules if m.split('.')[0] in ('django', 'config')])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "[]", out.stderr
