"""config/jobs.py: a broker that cannot be reached is logged, never raised into the request that committed."""
import logging
import os
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import pytest
import redis
from celery import Celery
from django.db import transaction

from config.jobs import enqueue, publish
from tests.processes import free_port


@pytest.fixture
def unreachable_app():
    """A Celery app whose broker is a closed loopback port, and one task on it."""
    app = Celery("jobs-test", broker=f"redis://127.0.0.1:{free_port()}/0", set_as_current=False)
    app.conf.broker_transport_options = {"socket_connect_timeout": 1, "socket_timeout": 1}
    calls = []

    @app.task(name="jobs_test.record")
    def record(value):
        calls.append(value)
        if value == "boom":
            raise ValueError("the task failed")

    return app, record, calls


def test_a_publish_the_broker_refuses_is_logged_and_reported(unreachable_app, caplog):
    _, task, calls = unreachable_app
    with caplog.at_level(logging.WARNING, logger="config.jobs"):
        assert publish(task, ("dpl_1",)) is False
    assert calls == []
    assert "Could not enqueue jobs_test.record for dpl_1" in caplog.text


@pytest.mark.django_db
def test_an_enqueue_after_commit_never_raises_into_the_caller(unreachable_app, django_capture_on_commit_callbacks,
                                                             caplog):
    _, task, calls = unreachable_app
    with caplog.at_level(logging.WARNING, logger="config.jobs"):
        with django_capture_on_commit_callbacks(execute=True) as callbacks, transaction.atomic():
            enqueue(task, "dpl_2")
            assert "Could not enqueue" not in caplog.text  # nothing is published before the commit
    assert len(callbacks) == 1
    assert "Could not enqueue jobs_test.record for dpl_2" in caplog.text


def test_eager_tasks_run_inline_and_their_errors_reach_the_caller(unreachable_app):
    app, task, calls = unreachable_app
    app.conf.task_always_eager = True
    app.conf.task_eager_propagates = True
    assert publish(task, ("ok",)) is True
    with pytest.raises(ValueError, match="the task failed"):
        publish(task, ("boom",))
    assert calls == ["ok", "boom"]


@pytest.mark.django_db
def test_a_task_is_published_by_its_name_through_the_project_app():
    """Services name tasks instead of importing them; eager in tests, the named task runs inline."""
    from platform_app.models import AttemptCounter

    AttemptCounter.objects.create(key="sign-in:ended", window_start=0, count=3, expires_at=1)
    assert publish("platform_app.tasks.identity.attempt_counters_prune") is True
    assert not AttemptCounter.objects.filter(key="sign-in:ended").exists()


def test_a_name_no_app_declares_is_refused_not_published():
    from celery.exceptions import NotRegistered

    with pytest.raises(NotRegistered):
        publish("platform_app.tasks.no_such_task", ("dpl_3",))


RACE = """
import sys, threading
import django
django.setup()
from config import jobs
errors, start = [], threading.Barrier(16)

def publish_first():
    start.wait()
    try:
        jobs._signature("otp_app.tasks.delivery_attempt", (1, "sealed"), {})
    except Exception as exc:
        errors.append(type(exc).__name__)

threads = [threading.Thread(target=publish_first) for _ in range(16)]
[t.start() for t in threads]
[t.join() for t in threads]
print(errors)
"""


def test_the_first_publishes_of_a_fresh_process_find_their_task_together():
    """A web process registers the task modules on its first publish; sixteen requests publishing at once all
    find their task (one registered while the others looked had them fail with NotRegistered, a 500 after
    their records were committed)."""
    env = {**{k: v for k, v in os.environ.items() if k in ("PATH", "DATABASE_URL", "REDIS_URL", "DATA_DIR")},
           "DJANGO_SETTINGS_MODULE": "config.settings.test"}
    out = subprocess.run([sys.executable, "-c", RACE], cwd=Path(__file__).resolve().parents[1], env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]"


def test_the_redis_transport_publishes_every_message_through_one_client_per_channel():
    """config.broker.RedisTransport: messages from several threads all reach the queue, and a channel keeps the
    client it made instead of building one per message."""
    url = os.environ.get("REDIS_URL")
    if not url:
        pytest.skip("needs Redis (REDIS_URL; CI sets it)")
    app = Celery("jobs-test-redis", broker=url, set_as_current=False)
    app.conf.broker_transport = "config.broker:RedisTransport"
    queue = f"jobs-test-{uuid.uuid4().hex}"
    server = redis.Redis.from_url(url)
    try:
        threads = [threading.Thread(target=lambda n=n: [app.send_task("jobs_test.record", args=[n, i], queue=queue)
                                                        for i in range(10)]) for n in range(4)]
        [t.start() for t in threads]
        [t.join() for t in threads]
        assert server.llen(queue) == 40
        with app.connection_for_write() as conn:
            channel = conn.default_channel
            assert type(channel).__module__ == "config.broker"
            with channel.conn_or_acquire() as first, channel.conn_or_acquire() as second:
                assert first is second and first.ping()
    finally:
        server.delete(queue)
        app.close()
