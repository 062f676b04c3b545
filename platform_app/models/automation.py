"""Automation: cron jobs and runs (top), log drains and deliveries, alert rules and alerts (below)."""
