"""Settings of the billing area (docs/billing.md): metering, the price book's defaults, cost recommendations, the
payments provider (Stripe's API), usage caps and dunning."""
from .components import INSTANCE_SIZES, PRICES_CURRENCY
from .core import env
from .sandbox import INSTANCE_CPU_SHARE, INSTANCE_MEMORY_MB

# The payments provider, spoken to through the official `stripe` library. Without PAYMENTS_API_KEY the billing
# routes that need it answer 409 `payments_not_configured` (cost, usage caps and invoices held still work).
PAYMENTS_API_KEY = env("PAYMENTS_API_KEY", default="")
PAYMENTS_API_BASE = env("PAYMENTS_API_BASE", default="https://api.stripe.com")
# Shown to the browser's card element (the provider's JS; see docs/billing.md on the CSP).
PAYMENTS_PUBLISHABLE_KEY = env("PAYMENTS_PUBLISHABLE_KEY", default="")
# Signs `POST /v1/webhooks/payments` (`payment-signature: t=<unix>,v1=<hex>`); empty = every delivery is 401.
PAYMENTS_WEBHOOK_SECRET = env("PAYMENTS_WEBHOOK_SECRET", default="")
PAYMENTS_WEBHOOK_TOLERANCE_SECONDS = env.int("PAYMENTS_WEBHOOK_TOLERANCE_SECONDS", default=300)
PAYMENTS_TIMEOUT_SECONDS = env.float("PAYMENTS_TIMEOUT_SECONDS", default=20.0)
PAYMENTS_MAX_NETWORK_RETRIES = env.int("PAYMENTS_MAX_NETWORK_RETRIES", default=2)  # idempotency keys make them safe
# The provider's price id of each paid plan (a key of PLANS); a plan without one cannot be subscribed to (409).
BILLING_PLAN_PRICE_IDS = {
    "pro": env("PAYMENTS_PRICE_PRO", default=""),
    "enterprise": env("PAYMENTS_PRICE_ENTERPRISE", default=""),
}
BILLING_PLAN_PRICE_SETTINGS = {"pro": "PAYMENTS_PRICE_PRO", "enterprise": "PAYMENTS_PRICE_ENTERPRISE"}

# Instances that belong to no component run with the INSTANCE_* sandbox defaults: they are metered as this size.
INSTANCE_DEFAULT_SIZE_KEY = "default"
INSTANCE_DEFAULT_SIZE = {"cpu": INSTANCE_CPU_SHARE, "memory_mb": INSTANCE_MEMORY_MB,
                         "price_per_hour": env.int("INSTANCE_DEFAULT_PRICE_PER_HOUR", default=3)}

# What seeds the price book (the `Price` model, editable in the admin): per meter, `amount` minor units of
# PRICES_CURRENCY for `unit_size` of the meter's base unit (seconds, requests, bytes, byte-hours). A meter the
# price book has no row for at some hour is priced from here.
GB = 10 ** 9
HOURS_PER_MONTH = 730
BILLING_PRICES = {
    "build_seconds": {"amount": env.int("PRICE_BUILD_MINUTE", default=1), "unit_size": 60, "unit": "build minute"},
    "edge_requests": {"amount": env.int("PRICE_MILLION_REQUESTS", default=200), "unit_size": 1_000_000,
                      "unit": "1,000,000 requests"},
    "edge_bytes": {"amount": env.int("PRICE_GB_TRANSFERRED", default=10), "unit_size": GB, "unit": "GB transferred"},
    "storage_artifacts": {"amount": env.int("PRICE_GB_MONTH_STORAGE", default=10), "unit_size": GB * HOURS_PER_MONTH,
                          "unit": "GB-month of deployment archives"},
    "storage_volumes": {"amount": env.int("PRICE_GB_MONTH_STORAGE", default=10), "unit_size": GB * HOURS_PER_MONTH,
                        "unit": "GB-month of volumes"},
    **{f"instance_seconds:{key}": {"amount": size["price_per_hour"], "unit_size": 3600, "unit": f"{key} instance hour"}
       for key, size in {**INSTANCE_SIZES, INSTANCE_DEFAULT_SIZE_KEY: INSTANCE_DEFAULT_SIZE}.items()},
}
BILLING_CURRENCY = PRICES_CURRENCY

# Metering: each run writes the last BILLING_METER_LOOKBACK_HOURS finished hours again (idempotent), so an hour a
# run missed, or edge counts flushed late, are still counted while the edge counters live (a day).
BILLING_METER_EVERY_SECONDS = env.int("BILLING_METER_EVERY_SECONDS", default=60)
BILLING_METER_LOOKBACK_HOURS = env.int("BILLING_METER_LOOKBACK_HOURS", default=3)
# Deployment archives, and the edge's counts, are metered for this many projects per hour and run (archives in id
# order; edge counts of the projects whose counts changed since a run took them, and as many served deployments are
# checked for a first visit), so a run stays under a second at 100,000 projects; an hour is complete after
# projects / batch runs, and it stays in the lookback for LOOKBACK_HOURS * 3600 / EVERY_SECONDS runs (180).
BILLING_METER_STORAGE_BATCH = env.int("BILLING_METER_STORAGE_BATCH", default=2_000)
BILLING_METER_EDGE_BATCH = env.int("BILLING_METER_EDGE_BATCH", default=2_000)
# An hour's archives are metered once it has been over this long: the hour's cursor of projects moves on, so a build
# that ended within the hour must have committed before its project is passed.
BILLING_METER_SETTLE_SECONDS = env.int("BILLING_METER_SETTLE_SECONDS", default=60)

# Cost recommendations.
BILLING_IDLE_DAYS = env.int("BILLING_IDLE_DAYS", default=7)  # a web component whose project got no request
BILLING_OVERSIZED_MEMORY_RATIO = env.float("BILLING_OVERSIZED_MEMORY_RATIO", default=0.25)  # peak under this share
BILLING_RIGHTSIZE_HEADROOM = env.float("BILLING_RIGHTSIZE_HEADROOM", default=2.0)  # suggested size ≥ peak × this
BILLING_PREVIEW_UNVISITED_DAYS = env.int("BILLING_PREVIEW_UNVISITED_DAYS", default=7)

# Usage caps: owners and billing members are told once per period at each of these percentages; at 100 new
# deployments are refused (402 `usage_cap_reached`).
BILLING_CAP_NOTICE_PERCENTS = (80, 100)
# Dunning: a workspace whose invoice payment failed is `past_due` when it is still unpaid this many days later.
BILLING_PAST_DUE_GRACE_DAYS = env.int("BILLING_PAST_DUE_GRACE_DAYS", default=7)

BILLING_BEAT: dict = {
    "billing-meter": {"task": "platform_app.tasks.billing.usage_meter", "schedule": float(BILLING_METER_EVERY_SECONDS)},
    "billing-invoices": {"task": "platform_app.tasks.billing.invoices_build", "schedule": 3600.0},
}
