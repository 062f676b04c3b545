"""Cron jobs, log drains and alert rules."""
from .core import env  # noqa: F401

AUTOMATION_BEAT: dict = {}
