"""Settings of the one-time-code service."""
import hashlib

from .core import SECRET_KEY, env

# Codes
OTP_CODE_TTL_SECONDS = env.int("OTP_CODE_TTL_SECONDS", default=600)
OTP_MAX_ATTEMPTS = env.int("OTP_MAX_ATTEMPTS", default=5)
OTP_RESEND_COOLDOWN_SECONDS = env.int("OTP_RESEND_COOLDOWN_SECONDS", default=30)
OTP_MAX_SENDS_PER_RECORD = env.int("OTP_MAX_SENDS_PER_RECORD", default=5)
# Keyed hash of codes and the key that seals a code on its way to the delivery task.
OTP_CODE_SECRET = env("OTP_CODE_SECRET", default="") or hashlib.sha256(f"otp-code:{SECRET_KEY}".encode()).hexdigest()

# Abuse limits
OTP_SENDS_PER_RECIPIENT = env.int("OTP_SENDS_PER_RECIPIENT", default=3)
OTP_SENDS_PER_RECIPIENT_WINDOW = env.int("OTP_SENDS_PER_RECIPIENT_WINDOW", default=600)
OTP_SENDS_PER_KEY_PER_MINUTE = env.int("OTP_SENDS_PER_KEY_PER_MINUTE", default=120)
OTP_FAILED_RECORDS_PER_RECIPIENT = env.int("OTP_FAILED_RECORDS_PER_RECIPIENT", default=5)  # per 24 h
OTP_IDEMPOTENCY_HOURS = 24

# In-process cache of API keys and routing rules (otp_app/services/config_cache.py): a revoke or a rule change
# reaches other processes within OTP_LOCAL_CHECK_SECONDS (the shared version key they read), and an entry is
# kept OTP_LOCAL_TTL_SECONDS at most (the bound when the cache holding that version key is unreachable).
OTP_LOCAL_CHECK_SECONDS = env.float("OTP_LOCAL_CHECK_SECONDS", default=1.0)
OTP_LOCAL_TTL_SECONDS = env.float("OTP_LOCAL_TTL_SECONDS", default=60.0)

# Money: integer minor units
OTP_CURRENCY = env("OTP_CURRENCY", default="USD")
# Rows a workspace's balance is spread over by a top-up: sends running at once hold their prices on different ones
# (otp_app/services/balance.py). About the sends one workspace has in flight at a time.
OTP_BALANCE_PURSES = env.int("OTP_BALANCE_PURSES", default=8)
OTP_PRICES = {
    "sms": env.int("OTP_PRICE_SMS", default=45),
    "whatsapp": env.int("OTP_PRICE_WHATSAPP", default=30),
    "email": env.int("OTP_PRICE_EMAIL", default=2),
    "console": 0,
}

# Routing: the default when a workspace has no rule for a country. Keys are ISO country
# codes or "*"; values the channels to try, in order.
OTP_DEFAULT_ROUTES = {"*": ["whatsapp", "sms"]}

# Channels: a channel without credentials is not configured and never picked.
OTP_CONSOLE_CHANNEL = env.bool("OTP_CONSOLE_CHANNEL", default=False)  # development: print codes to the log
TWILIO_BASE_URL = env("TWILIO_BASE_URL", default="https://api.twilio.com")
TWILIO_ACCOUNT_SID = env("TWILIO_ACCOUNT_SID", default="")
TWILIO_AUTH_TOKEN = env("TWILIO_AUTH_TOKEN", default="")
TWILIO_FROM = env("TWILIO_FROM", default="")
TWILIO_MESSAGING_SERVICE_SID = env("TWILIO_MESSAGING_SERVICE_SID", default="")
WHATSAPP_BASE_URL = env("WHATSAPP_BASE_URL", default="https://graph.facebook.com")
WHATSAPP_API_VERSION = env("WHATSAPP_API_VERSION", default="v21.0")
WHATSAPP_PHONE_NUMBER_ID = env("WHATSAPP_PHONE_NUMBER_ID", default="")
WHATSAPP_ACCESS_TOKEN = env("WHATSAPP_ACCESS_TOKEN", default="")
WHATSAPP_TEMPLATE = env("WHATSAPP_TEMPLATE", default="verification_code")
OTP_EMAIL_ENABLED = env.bool("OTP_EMAIL_ENABLED", default=False)  # uses Django's EMAIL_* settings
OTP_EMAIL_FROM = env("OTP_EMAIL_FROM", default="codes@localhost")
OTP_PROVIDER_TIMEOUT_SECONDS = env.float("OTP_PROVIDER_TIMEOUT_SECONDS", default=10.0)
OTP_DELIVERY_RETRIES = env.int("OTP_DELIVERY_RETRIES", default=2)  # per channel, for transient failures
OTP_PUBLIC_BASE_URL = env("OTP_PUBLIC_BASE_URL", default="http://localhost:8000")  # status callback URLs

# Deliveries are taken from their table by a drain job (otp_app/services/drain.py): at most this many per claim,
# live ones sent side by side on this many threads of the worker process; after a short batch the drain waits
# OTP_DRAIN_LINGER_SECONDS for more to gather; the flag that keeps sends from publishing a second drain outlives
# the running drain's last sign of life by OTP_DRAIN_WAKE_SECONDS.
OTP_DRAIN_BATCH = env.int("OTP_DRAIN_BATCH", default=50)
OTP_DRAIN_LINGER_SECONDS = env.float("OTP_DRAIN_LINGER_SECONDS", default=0.02)
OTP_DRAIN_THREADS = env.int("OTP_DRAIN_THREADS", default=8)
OTP_DRAIN_WAKE_SECONDS = env.float("OTP_DRAIN_WAKE_SECONDS", default=5.0)
# A send that saw the flag up before writing and committed within this long publishes nothing and raises nothing:
# the drain, after lowering the flag, looks once more this long later (deliveries_wake). 0: every send raises.
OTP_DRAIN_WAKE_GRACE_SECONDS = env.float("OTP_DRAIN_WAKE_GRACE_SECONDS", default=0.1)
# A drain hands over to a new job after this long, so that stopping a worker never waits on an endless one.
OTP_DRAIN_MAX_SECONDS = env.float("OTP_DRAIN_MAX_SECONDS", default=30.0)

# A delivery still queued this long after it was made (or last retried) lost its job (the broker was down):
# the beat sweep sends the record a fresh code on a new delivery.
OTP_REDELIVER_AFTER_SECONDS = env.float("OTP_REDELIVER_AFTER_SECONDS", default=60.0)
OTP_BEAT = {
    "otp-expire-sweep": {"task": "otp_app.tasks.otp_expire_due", "schedule": 60.0},
    "otp-redeliver-stale": {"task": "otp_app.tasks.deliveries_redeliver_stale",
                            "schedule": env.float("OTP_REDELIVER_INTERVAL_SECONDS", default=30.0)},
    "otp-idempotency-sweep": {"task": "otp_app.tasks.idempotency_keys_purge", "schedule": 3600.0},
}
