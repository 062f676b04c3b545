"""Buckets: S3-compatible object storage for projects (docs/buckets.md)."""
from .core import env

# The S3-compatible endpoint buckets are made on (https://s3.eu-west-1.amazonaws.com, a MinIO...). Empty: buckets
# are not offered (409 `addon_unavailable`). The credentials are an administrator's: they create buckets and the
# IAM users whose keys each bucket's project gets.
BUCKETS_S3_ENDPOINT = env("BUCKETS_S3_ENDPOINT", default="")
BUCKETS_S3_REGION = env("BUCKETS_S3_REGION", default="us-east-1")
BUCKETS_S3_ACCESS_KEY_ID = env("BUCKETS_S3_ACCESS_KEY_ID", default="")
BUCKETS_S3_SECRET_ACCESS_KEY = env("BUCKETS_S3_SECRET_ACCESS_KEY", default="")
# Where the IAM API is (a user, an inline policy and an access key per bucket); empty: the S3 endpoint itself.
# An endpoint without one refuses new buckets with 409 `addon_unavailable` naming this setting.
BUCKETS_S3_IAM_ENDPOINT = env("BUCKETS_S3_IAM_ENDPOINT", default="")
BUCKETS_IAM_PATH = env("BUCKETS_IAM_PATH", default="/platform-buckets/")
# Put before every bucket's name (`<prefix><project slug>-<name>`): S3 names are global on AWS.
BUCKETS_NAME_PREFIX = env("BUCKETS_NAME_PREFIX", default="")
BUCKETS_MAX_PER_PROJECT = env.int("BUCKETS_MAX_PER_PROJECT", default=10)
BUCKETS_S3_TIMEOUT_SECONDS = env.float("BUCKETS_S3_TIMEOUT_SECONDS", default=10.0)
# How often objects and bytes of every bucket are counted (list_objects_v2, by a worker).
BUCKETS_USAGE_REFRESH_SECONDS = env.float("BUCKETS_USAGE_REFRESH_SECONDS", default=600.0)

BUCKETS_BEAT: dict = {
    "buckets-usage-refresh": {"task": "platform_app.tasks.buckets.buckets_usage_refresh",
                              "schedule": BUCKETS_USAGE_REFRESH_SECONDS},
    "buckets-reap": {"task": "platform_app.tasks.buckets.buckets_reap", "schedule": 300.0},
}
