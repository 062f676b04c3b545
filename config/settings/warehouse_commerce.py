"""Settings of warehouse accounts, quotes and allowances."""
from .core import env

WAREHOUSE_JWKS_URL = env("WAREHOUSE_JWKS_URL", default="")  # empty: the platform's own keys
WAREHOUSE_REFRESH_COOKIE_DAYS = env.int("WAREHOUSE_REFRESH_COOKIE_DAYS", default=30)
# A rate request starts at most this many days ahead (two years): operators price near-term space.
WAREHOUSE_START_HORIZON_DAYS = env.int("WAREHOUSE_START_HORIZON_DAYS", default=730)
# Monthly allowances per plan.
WAREHOUSE_PLANS = {
    "free": {"search": env.int("WAREHOUSE_FREE_SEARCHES", default=200), "rfq": env.int("WAREHOUSE_FREE_RFQS", default=10)},
    "pro": {"search": 10000, "rfq": 500},
}
# A configured payment provider is what turns allowances from recorded into enforced.
PAYMENTS_API_KEY = env("PAYMENTS_API_KEY", default="")
