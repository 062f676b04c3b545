"""What a tenant's build may not do to a shared builder: flood it with output (read in chunks, lines cut at
LINE_BYTES, linear time), fail its log uploads with long lines (batches split to fit the body limit), keep a
slot after its deployment ended (the sandbox is killed within seconds), hide disk from its limit (paths past
PATH_MAX, deleted files kept open). That it leaves nothing behind, at any depth: test_outputs.py."""
import os
import time
from pathlib import Path

import pytest

from platform_app.models import Deployment
from platform_app.services.agents.agents import agent_invite_create
from tests.platform_app.sandbox.conftest import deploy, log_text
from tests.processes import start_node, wait_until

pytestmark = pytest.mark.django_db(transaction=True)

MARK = "sleep 617"  # a command line no other process of the machine has


def _capture():
    from django.test.testcases import TestCase

    return TestCase.captureOnCommitCallbacks


def _status(deployment_id: str, *wanted) -> str | None:
    status = Deployment.objects.get(pk=deployment_id).status
    return status if status in wanted else None


def _sleeping() -> list[int]:
    """Host pids of the hostile build's `sleep`."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").strip() == MARK.encode():
                found.append(int(pid))
        except OSError:
            pass
    return found


def test_a_flood_without_newlines_is_cut_and_an_ended_build_frees_its_slot(
        live_server, sandbox, alice, as_user, make_project, tmp_path):
    sandbox.BUILD_INLINE = False
    builder = start_node(server=live_server.url, join=agent_invite_create(workspace=None)[1], name="builder-2",
                         data_dir=tmp_path / "builder", log_dir=tmp_path, build=2, run=False)
    try:
        client = as_user(alice)
        flood = 30_000_000
        hostile = deploy(client, make_project("flood", {"index.html": "x"}, build_command=(
            f"head -c {flood} /dev/zero | tr '\\0' a; echo; echo flooded; {MARK}")), _capture())
        wait_until(lambda: "flooded" in log_text(hostile).splitlines(), timeout=60, what="the flood to be read", logs=[builder])
        cut = [line for line in log_text(hostile).splitlines() if line.startswith("aaaa")]
        assert cut == ["a" * 16384 + f" …[cut: {flood - 16384} bytes]"]
        assert _status(hostile.pk, "building")

        site = deploy(client, make_project("beside", {"src/index.html": "<h1>beside</h1>"},
                                           build_command="mkdir -p out && cp src/index.html out/",
                                           output_directory="out"), _capture())
        wait_until(lambda: _status(site.pk, "ready", "error"), timeout=60, what="the other build", logs=[builder])
        site.refresh_from_db()
        assert site.status == "ready", site.error_message

        assert _sleeping()
        assert client.post(f"/v1/orgs/acme/deployments/{hostile.pk}/cancel").status_code == 201
        ended = time.monotonic()
        wait_until(lambda: not _sleeping(), timeout=15, what="the canceled build's sandbox to end", logs=[builder])
        wait_until(lambda: not any((tmp_path / "builder" / "builds").iterdir()), timeout=15,
                   what="the build folder to be removed", logs=[builder])
        assert time.monotonic() - ended < 10
        assert "Build canceled." in log_text(hostile)
        assert "failed unexpectedly" not in builder.log_tail()
    finally:
        builder.stop()


def test_long_lines_reach_the_log_in_batches_that_fit(live_server, sandbox, alice, as_user, make_project, tmp_path):
    sandbox.BUILD_INLINE = False
    builder = start_node(server=live_server.url, join=agent_invite_create(workspace=None)[1], name="builder-1",
                         data_dir=tmp_path / "builder", log_dir=tmp_path, build=1, run=False)
    try:
        script = "import sys; [print(f'{i:03d}' + 'x' * 10000) for i in range(300)]; print('y' * 40000)"
        site = deploy(as_user(alice), make_project("wordy", {"index.html": "x"}, build_command=(
            f"python3 -c \"{script}\"; mkdir -p out; cp index.html out/"), output_directory="out"), _capture())
        wait_until(lambda: _status(site.pk, "ready", "error"), timeout=90, what="the build", logs=[builder])
        site.refresh_from_db()
        assert site.status == "ready", site.error_message
        lines = log_text(site).splitlines()
        assert [line[:3] for line in lines if line.endswith("x" * 10000)] == [f"{i:03d}" for i in range(300)]
        assert "y" * 16384 + f" …[cut: {40000 - 16384} bytes]" in lines
    finally:
        builder.stop()


DISK = {
    # 17 folders of 250 characters (past PATH_MAX), entered one relative `cd` at a time, 3 files of 3 MB there
    "a path longer than PATH_MAX": "for i in $(seq 17); do mkdir $(printf 'd%.0s' $(seq 250)) && cd d*; done; "
                                   "for f in 1 2 3; do head -c 3000000 /dev/zero > f$f; done; pwd | wc -c; sleep 8",
    # 3 files of 3 MB written, kept open and deleted
    "deleted files still open": "python3 -c \"import os, time\nfiles = [open(f'f{i}', 'wb') for i in range(3)]\n"
                                "for i, f in enumerate(files):\n    f.write(bytes(3000000)); f.flush(); "
                                "os.unlink(f'f{i}')\nprint('deleted', flush=True); time.sleep(8)\"",
}


@pytest.mark.parametrize("case", sorted(DISK))
def test_disk_written_where_a_path_walk_misses_it_is_counted(case, alice_client, make_project, sandbox,
                                                               django_capture_on_commit_callbacks):
    sandbox.BUILD_DISK_MB = 4
    project = make_project("hidden-disk", {"index.html": "ok"}, build_command=f"echo started; {DISK[case]}")
    deployment = deploy(alice_client, project, django_capture_on_commit_callbacks)
    assert deployment.status == "error", log_text(deployment)
    assert deployment.error_message == "The build went over its disk limit of 4 MB (BUILD_DISK_MB)."
