"""A real S3-compatible server for the bucket tests: moto's server mode on a loopback port, in this process, with
IAM enforced (moto checks every request's signature and the caller's policies once `enable_iam_authentication`
is on). The platform is configured with an administrator's key made on that server; tests talk to it through
boto3 as any client would.

`s3_endpoint` (session) starts the server; `s3` (per test) empties it, makes the administrator, points the settings
at it and turns IAM enforcement on for the test; `artifacts_bucket` (per test) puts the platform's artifact storage
in a bucket there, as ARTIFACTS_S3_BUCKET does."""
import json
import os
import socket

import pytest

REGION = "us-east-1"


def _moto():
    try:
        from moto.core import enable_iam_authentication
        from moto.server import ThreadedMotoServer
    except ImportError as exc:  # pragma: no cover - moto[server] is in requirements-test.txt
        if os.environ.get("REQUIRE_SANDBOX"):
            pytest.fail(f"moto's server is required (REQUIRE_SANDBOX is set): {exc}")
        pytest.skip(f"needs moto[server]: {exc}")
    return ThreadedMotoServer, enable_iam_authentication


def client(service: str, endpoint: str, key: str = "unused", secret: str = "unused", **kwargs):
    import boto3
    from botocore.config import Config

    return boto3.client(service, endpoint_url=endpoint, region_name=REGION, aws_access_key_id=key,
                        aws_secret_access_key=secret,
                        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}), **kwargs)


class S3:
    def __init__(self, endpoint: str, key: str, secret: str):
        self.endpoint, self.key, self.secret = endpoint, key, secret

    def admin(self, service: str = "s3"):
        return client(service, self.endpoint, self.key, self.secret)

    def as_key(self, credentials: dict, service: str = "s3"):
        """A client with credentials as the API answered them (`accessKeyId`, `secretAccessKey`)."""
        return client(service, self.endpoint, credentials["accessKeyId"], credentials["secretAccessKey"])

    def bucket_names(self) -> set:
        return {b["Name"] for b in self.admin().list_buckets()["Buckets"]}

    def iam_users(self) -> set:
        return {u["UserName"] for u in self.admin("iam").list_users()["Users"]}


@pytest.fixture(scope="session")
def s3_endpoint():
    server_class, _ = _moto()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = server_class(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    yield f"http://127.0.0.1:{port}"
    server.stop()


@pytest.fixture
def s3(s3_endpoint, settings):
    import httpx

    _, enable_iam_authentication = _moto()
    httpx.post(f"{s3_endpoint}/moto-api/reset", timeout=10).raise_for_status()
    iam = client("iam", s3_endpoint)  # before enforcement: anyone may make the administrator
    iam.create_user(UserName="platform-admin")
    iam.put_user_policy(UserName="platform-admin", PolicyName="all", PolicyDocument=json.dumps(
        {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}))
    key = iam.create_access_key(UserName="platform-admin")["AccessKey"]
    settings.BUCKETS_S3_ENDPOINT = s3_endpoint
    settings.BUCKETS_S3_IAM_ENDPOINT = ""
    settings.BUCKETS_S3_REGION = REGION
    settings.BUCKETS_S3_ACCESS_KEY_ID = key["AccessKeyId"]
    settings.BUCKETS_S3_SECRET_ACCESS_KEY = key["SecretAccessKey"]
    settings.BUCKETS_NAME_PREFIX = ""
    with enable_iam_authentication():
        yield S3(s3_endpoint, key["AccessKeyId"], key["SecretAccessKey"])


ARTIFACTS_BUCKET = "platform-artifacts"


@pytest.fixture
def artifacts_bucket(s3_endpoint, settings):
    """Artifact storage (uploads, build sources, archives, build logs) in a bucket of the server; its boto3 client.
    moto's servers in one process share one store: emptied before and after, so no other test sees these objects."""
    import httpx

    httpx.post(f"{s3_endpoint}/moto-api/reset", timeout=10).raise_for_status()
    s3 = client("s3", s3_endpoint, "test-key", "test-secret")
    s3.create_bucket(Bucket=ARTIFACTS_BUCKET)
    settings.STORAGES = {**settings.STORAGES, "artifacts": {"BACKEND": "storages.backends.s3.S3Storage", "OPTIONS": {
        "bucket_name": ARTIFACTS_BUCKET, "endpoint_url": s3_endpoint, "access_key": "test-key",
        "secret_key": "test-secret", "region_name": REGION, "querystring_auth": True, "signature_version": "s3v4",
        "querystring_expire": 300, "file_overwrite": True, "default_acl": None}}}
    yield s3
    httpx.post(f"{s3_endpoint}/moto-api/reset", timeout=10).raise_for_status()
