"""A build that goes over a limit is stopped and ends `error` with a line naming the limit and the setting:
memory, processes (a fork bomb), CPU time, disk written, wall time."""
import pytest

from tests.platform_app.sandbox.conftest import deploy, log_text

pytestmark = pytest.mark.django_db

CASES = {
    "memory": ({"BUILD_MEMORY_MB": 64}, "python3 -c 'a = [bytearray(8 << 20) for _ in range(64)]'",
               "The build went over its memory limit of 64 MB (BUILD_MEMORY_MB)."),
    "processes": ({"BUILD_PROCESSES": 32}, "f() { f | f & }; f; sleep 20",
                  "The build went over its limit of 32 processes (BUILD_PROCESSES)."),
    "cpu": ({"BUILD_CPU_SECONDS": 1}, "python3 -c 'while True: pass'",
            "The build went over its CPU time limit of 1 s (BUILD_CPU_SECONDS)."),
    "disk": ({"BUILD_DISK_MB": 20}, "dd if=/dev/zero of=big bs=1M count=60 2>/dev/null; sleep 20",
             "The build went over its disk limit of 20 MB (BUILD_DISK_MB)."),
    "time": ({"BUILD_TIMEOUT_SECONDS": 2}, "sleep 30",
             "The build exceeded its time limit of 2s (BUILD_TIMEOUT_SECONDS)."),
}


@pytest.mark.parametrize("limit", sorted(CASES))
def test_a_build_over_its_limit_ends_in_error_naming_it(limit, alice_client, make_project, sandbox,
                                                        django_capture_on_commit_callbacks):
    from platform_app.services.deployments.build_jobs import build_limits, build_runner

    overrides, command, message = CASES[limit]
    for name, value in overrides.items():
        setattr(sandbox, name, value)
    how = build_runner().enforced(build_limits())["limits"].get(limit, "watch")
    if how not in ("watch",) and not how.startswith("cgroup"):
        pytest.skip(f"{limit} is enforced by {how} here, which cannot say which limit stopped the build")
    project = make_project(f"over-{limit}", {"index.html": "ok"}, build_command=f"echo started; {command}")
    deployment = deploy(alice_client, project, django_capture_on_commit_callbacks)
    assert deployment.status == "error"
    assert deployment.error_message == message
    text = log_text(deployment)
    assert "started" in text and f"Error: {message}" in text
