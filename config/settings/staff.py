"""Settings of the staff area: the status page's components and SLOs, and its probes (docs/staff.md)."""
from .core import env

# What the public status page lists, in this order.
STATUS_COMPONENTS = {
    "api": "API",
    "dashboard": "Dashboard",
    "builds": "Builds",
    "edge": "Edge",
    "delivery": "Code delivery",
    "warehouse": "Warehouse directory",
}
# One probe and SLO per component. A probe's minute sample is good when it worked and took at most
# `threshold_ms`; `objective` is the share of good samples promised (%).
STATUS_SLOS = {
    "api": {"component": "api", "objective": 99.9, "threshold_ms": 500,
            "description": "GET /health answers 200 in under 500 ms"},
    "dashboard": {"component": "dashboard", "objective": 99.5, "threshold_ms": 1000,
                  "description": "the dashboard's sign-in page answers 200 in under 1 s"},
    "builds": {"component": "builds", "objective": 99.0, "threshold_ms": 120_000,
               "description": "a deployment waits at most 2 min from queued to building"},
    "edge": {"component": "edge", "objective": 99.9, "threshold_ms": 500,
             "description": "the edge serves the newest ready static deployment in under 500 ms"},
    "delivery": {"component": "delivery", "objective": 99.5, "threshold_ms": 30_000,
                 "description": "a test-mode code reaches the sandbox outbox through the worker within 30 s"},
    "warehouse": {"component": "warehouse", "objective": 99.9, "threshold_ms": 1000,
                  "description": "GET /api/health of the warehouse directory answers 200 in under 1 s"},
}
# A component is shown from its probe's samples of the last STATUS_RECENT_MINUTES: all bad is an outage, some
# bad is degraded. Minute samples are kept STATUS_SAMPLE_RETENTION_HOURS (their hours stay in ProbeHour).
STATUS_RECENT_MINUTES = env.int("STATUS_RECENT_MINUTES", default=5)
STATUS_SAMPLE_RETENTION_HOURS = env.int("STATUS_SAMPLE_RETENTION_HOURS", default=48)
STATUS_HISTORY_DAYS = 90
# The code-delivery probe sends through a test key of this workspace (made on the first run).
STATUS_PROBE_WORKSPACE = env("STATUS_PROBE_WORKSPACE", default="status-probe")

STAFF_BEAT: dict = {
    "status-probes": {"task": "platform_app.tasks.staff.status_probes_run", "schedule": 60.0},
}
