"""Celery: Redis when REDIS_URL is set, else kombu's filesystem transport in the data folder."""
from kombu import Queue

from .core import DATA_DIR, REDIS_URL, env

# A broker that stops answering must not hold a request: short socket timeouts, and a publish is retried
# briefly (config/jobs.py logs a failure and leaves the row to its beat sweep).
BROKER_CONNECT_TIMEOUT_SECONDS = env.float("BROKER_CONNECT_TIMEOUT_SECONDS", default=1.0)
BROKER_SOCKET_TIMEOUT_SECONDS = env.float("BROKER_SOCKET_TIMEOUT_SECONDS", default=3.0)
CELERY_TASK_PUBLISH_RETRY_POLICY = {"max_retries": env.int("BROKER_PUBLISH_RETRIES", default=1),
                                    "interval_start": 0, "interval_step": 0.2, "interval_max": 0.2}
CELERY_BROKER_CONNECTION_TIMEOUT = BROKER_CONNECT_TIMEOUT_SECONDS

if REDIS_URL:
    CELERY_BROKER_URL = REDIS_URL
    CELERY_BROKER_TRANSPORT = "config.broker:RedisTransport"  # one client per channel (config/broker.py)
    CELERY_RESULT_BACKEND = REDIS_URL
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "visibility_timeout": 3600,
        "socket_connect_timeout": BROKER_CONNECT_TIMEOUT_SECONDS,
        "socket_timeout": BROKER_SOCKET_TIMEOUT_SECONDS,
        "socket_keepalive": True,
    }
    CELERY_REDIS_SOCKET_CONNECT_TIMEOUT = BROKER_CONNECT_TIMEOUT_SECONDS
    CELERY_REDIS_SOCKET_TIMEOUT = BROKER_SOCKET_TIMEOUT_SECONDS
else:
    _queue = DATA_DIR / "broker"
    (_queue / "processed").mkdir(parents=True, exist_ok=True)
    # kombu's filesystem transport, writing each message atomically (config/broker.py).
    CELERY_BROKER_URL = "filesystem://"
    CELERY_BROKER_TRANSPORT = "config.broker:FilesystemTransport"
    CELERY_RESULT_BACKEND = None
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_queue),
        "data_folder_out": str(_queue),
        "processed_folder": str(_queue / "processed"),
        "store_processed": False,
        "control_folder": str(_queue / "control"),
    }

# Two queues (docs/deployment.md, Processes). `codes`: code deliveries, short waits on providers, served by a
# worker running threads (Procfile `codes`), so a code never waits behind a build and a delivery does not pay for
# a hand-off to a child process (it cost more than the delivery itself). `celery`: everything else, served by
# the prefork worker whose children a build's time limit can kill. A worker started without -Q serves both.
CELERY_TASK_DEFAULT_QUEUE = "celery"
CELERY_TASK_QUEUES = [Queue("celery"), Queue("codes")]
CELERY_TASK_ROUTES = {"otp_app.tasks.deliveries_drain": {"queue": "codes"},
                      "otp_app.tasks.delivery_attempt": {"queue": "codes"}}

CELERY_TASK_ALWAYS_EAGER = env.bool("CELERY_TASK_ALWAYS_EAGER", default=False)
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TIMEZONE = "UTC"
CELERY_BEAT_SCHEDULE_FILENAME = str(DATA_DIR / "celerybeat-schedule")
# Periodic work: each area declares its own entries (IDENTITY_BEAT, DEPLOYMENTS_BEAT, OTP_BEAT) and base.py
# assembles CELERY_BEAT_SCHEDULE from them.
