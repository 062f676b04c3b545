"""The database store of config/ratelimit.py's fixed-window counters (RATELIMIT_STORE=database)."""
