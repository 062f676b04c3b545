"""Buckets against a real S3-compatible server (moto's server mode, IAM enforced): the credentials the API answers
put and get objects in their bucket and nothing else; usage is counted from the endpoint; a non-empty bucket is
deleted only with force; names are checked before S3 is asked; the platform without an endpoint, or without IAM,
says which setting to set."""
import json

import pytest
from botocore.exceptions import ClientError

from platform_app.models import Bucket
from platform_app.services.env.env import env_resolve
from platform_app.services.resources import buckets as bucket_services
from platform_app.tasks.buckets import buckets_reap, buckets_usage_refresh
from tests.platform_app.projects.factories import ProjectFactory
from tests.platform_app.resources.s3_server import client, s3, s3_endpoint  # noqa: F401 - fixtures

pytestmark = pytest.mark.django_db


@pytest.fixture
def project(workspace):
    return ProjectFactory(workspace=workspace, name="Web", slug="web")


def url(project, rest=""):
    return f"/v1/orgs/acme/projects/{project.pk}/buckets{rest}"


def create(api, project, name="uploads"):
    return api.post(url(project), {"name": name}, format="json")


def denied(call) -> str:
    with pytest.raises(ClientError) as caught:
        call()
    return caught.value.response["Error"]["Code"]


def test_create_answers_credentials_once_and_they_round_trip_an_object(alice_client, project, s3):
    resp = create(alice_client, project)
    assert resp.status_code == 201, resp.json()
    body = resp.json()
    assert set(body) >= {"id", "name", "endpoint", "region", "objects", "bytes", "createdAt", "credentials"}
    assert body["name"] == "web-uploads" and body["label"] == "uploads" and body["status"] == "ready"
    assert body["endpoint"] == s3.endpoint and body["region"] == "us-east-1"
    assert body["objects"] == 0 and body["bytes"] == 0
    credentials = body["credentials"]
    assert set(credentials) == {"accessKeyId", "secretAccessKey"}
    assert "web-uploads" in s3.bucket_names()

    mine = s3.as_key(credentials)
    mine.put_object(Bucket="web-uploads", Key="hello.txt", Body=b"hello, bucket")
    assert mine.get_object(Bucket="web-uploads", Key="hello.txt")["Body"].read() == b"hello, bucket"
    assert [o["Key"] for o in mine.list_objects_v2(Bucket="web-uploads")["Contents"]] == ["hello.txt"]

    listed = alice_client.get(url(project)).json()["items"]
    assert [b["id"] for b in listed] == [body["id"]] and "credentials" not in listed[0]
    row = Bucket.objects.get()
    assert row.access_key_id == credentials["accessKeyId"]
    assert credentials["secretAccessKey"] not in row.secret_encrypted  # stored encrypted


def test_scoped_credentials_reach_no_other_bucket(alice_client, project, s3):
    s3.admin().create_bucket(Bucket="someone-elses")
    s3.admin().put_object(Bucket="someone-elses", Key="private.txt", Body=b"not yours")
    first = create(alice_client, project, "first").json()["credentials"]
    create(alice_client, project, "second")
    mine = s3.as_key(first)
    for other in ("someone-elses", "web-second"):
        assert denied(lambda b=other: mine.put_object(Bucket=b, Key="x", Body=b"x")) == "AccessDenied"
        assert denied(lambda b=other: mine.list_objects_v2(Bucket=b)) == "AccessDenied"
    assert denied(lambda: mine.get_object(Bucket="someone-elses", Key="private.txt")) == "AccessDenied"
    assert denied(lambda: mine.create_bucket(Bucket="web-third")) == "AccessDenied"
    assert denied(lambda: mine.delete_bucket(Bucket="web-first")) == "AccessDenied"  # objects only, not the bucket
    assert denied(lambda: mine.list_buckets()) == "AccessDenied"
    assert denied(lambda: s3.as_key(first, "iam").list_users()) == "AccessDenied"
    mine.put_object(Bucket="web-first", Key="ok.txt", Body=b"ok")  # its own bucket still works


def test_the_policy_names_only_the_bucket_and_its_objects(alice_client, project, s3):
    bucket_id = create(alice_client, project).json()["id"]
    user = Bucket.objects.get(pk=bucket_id).iam_user
    document = s3.admin("iam").get_user_policy(UserName=user, PolicyName="bucket")["PolicyDocument"]
    document = json.loads(document) if isinstance(document, str) else document
    assert {s["Resource"] for s in document["Statement"]} == {"arn:aws:s3:::web-uploads", "arn:aws:s3:::web-uploads/*"}
    assert all(s["Effect"] == "Allow" and "s3:*" not in s["Action"] for s in document["Statement"])


def test_usage_is_counted_from_the_endpoint_page_by_page(alice_client, project, s3, monkeypatch):
    credentials = create(alice_client, project).json()["credentials"]
    mine = s3.as_key(credentials)
    for i in range(5):
        mine.put_object(Bucket="web-uploads", Key=f"file-{i}.txt", Body=b"x" * (10 + i))
    assert alice_client.get(url(project)).json()["items"][0]["objects"] == 0  # the last measure, until the next
    real_paginate = None

    def small_pages(self, **kwargs):  # boto3's own paginator, asked for pages of two
        return real_paginate(self, **{**kwargs, "PaginationConfig": {"PageSize": 2}})

    from botocore.paginate import Paginator

    real_paginate = Paginator.paginate
    monkeypatch.setattr(Paginator, "paginate", small_pages)
    assert buckets_usage_refresh() == 1
    item = alice_client.get(url(project)).json()["items"][0]
    assert item["objects"] == 5 and item["bytes"] == sum(10 + i for i in range(5)) and item["measuredAt"]


def test_a_non_empty_bucket_is_deleted_only_with_force(alice_client, project, s3):
    body = create(alice_client, project).json()
    mine = s3.as_key(body["credentials"])
    mine.put_object(Bucket="web-uploads", Key="keep.txt", Body=b"keep")
    user = Bucket.objects.get().iam_user

    resp = alice_client.delete(url(project, f"/{body['id']}"))
    assert resp.status_code == 409 and resp.json()["code"] == "bucket_not_empty"
    assert Bucket.objects.get().status == "ready" and "web-uploads" in s3.bucket_names()
    assert mine.get_object(Bucket="web-uploads", Key="keep.txt")["Body"].read() == b"keep"

    resp = alice_client.delete(url(project, f"/{body['id']}?force=true"))
    assert resp.status_code == 200, resp.json()
    assert resp.json() == {"deleted": True, "objectsDeleted": 1}
    assert "web-uploads" not in s3.bucket_names() and user not in s3.iam_users()
    assert not Bucket.objects.exists()
    assert denied(lambda: s3.admin().head_bucket(Bucket="web-uploads")) == "404"
    assert alice_client.delete(url(project, f"/{body['id']}?force=true")).status_code == 404


def test_an_empty_bucket_is_deleted_without_force(alice_client, project, s3):
    bucket_id = create(alice_client, project).json()["id"]
    resp = alice_client.delete(url(project, f"/{bucket_id}"))
    assert resp.status_code == 200 and resp.json() == {"deleted": True, "objectsDeleted": 0}
    assert s3.bucket_names() == set() and s3.iam_users() == {"platform-admin"}


def test_force_must_be_a_boolean(alice_client, project, s3):
    bucket_id = create(alice_client, project).json()["id"]
    resp = alice_client.delete(url(project, f"/{bucket_id}?force=yes-please"))
    assert resp.status_code == 400 and resp.json()["details"]["force"]
    assert Bucket.objects.filter(pk=bucket_id).exists()


@pytest.mark.parametrize("name, rule", [
    ("", "required"), ("Uploads", "characters"), ("up_loads", "characters"), ("a" * 60, "length"),
    ("uploads-", "edges"), ("up..loads", "adjacent_periods"), ("up.-loads", "period_hyphen"),
    ("logs-s3alias", "reserved_suffix"), ("x--table-s3", "reserved_suffix"),
])
def test_bad_names_are_400_naming_the_rule_and_nothing_is_made(alice_client, project, s3, name, rule):
    resp = create(alice_client, project, name)
    assert resp.status_code == 400, resp.json()
    body = resp.json()
    assert body["code"] == "invalid_bucket_name" and body["details"]["rule"] == rule and body["details"]["name"]
    assert not Bucket.objects.exists() and s3.bucket_names() == set() and s3.iam_users() == {"platform-admin"}


def test_a_name_the_endpoint_refuses_is_400_with_its_reason(alice_client, project, s3, settings):
    # another account of the endpoint holds the name: S3 itself refuses it (BucketAlreadyExists)
    settings.BUCKETS_S3_REGION = "eu-west-1"
    other = client("s3", s3.endpoint, s3.key, s3.secret)
    other.meta.events.register("before-sign.s3", lambda request, **_: request.headers.add_header(
        "x-moto-account-id", "111111111111"))
    from moto.core import disable_iam_authentication

    with disable_iam_authentication():  # moto's IAM knows only this account's keys
        other.create_bucket(Bucket="web-taken")
    resp = create(alice_client, project, "taken")
    assert resp.status_code == 400, resp.json()
    body = resp.json()
    assert body["code"] == "bucket_name_refused" and "BucketAlreadyExists" in body["message"]
    assert not Bucket.objects.exists() and s3.iam_users() == {"platform-admin"}


def test_a_name_already_at_the_endpoint_is_400(alice_client, project, s3):
    # in us-east-1 S3 answers 200 to re-creating one's own bucket: the platform asks first
    s3.admin().create_bucket(Bucket="web-uploads")
    s3.admin().put_object(Bucket="web-uploads", Key="old.txt", Body=b"someone's")
    resp = create(alice_client, project)
    assert resp.status_code == 400 and resp.json()["code"] == "bucket_name_refused"
    assert "BucketAlreadyExists" in resp.json()["message"]
    assert not Bucket.objects.exists() and s3.iam_users() == {"platform-admin"}


def test_the_same_name_twice_is_409_and_the_limit_holds(alice_client, project, s3, settings):
    assert create(alice_client, project).status_code == 201
    resp = create(alice_client, project)
    assert resp.status_code == 409 and resp.json()["code"] == "bucket_exists"
    settings.BUCKETS_MAX_PER_PROJECT = 1
    resp = create(alice_client, project, "more")
    assert resp.status_code == 409 and resp.json()["code"] == "limit_reached"
    assert Bucket.objects.count() == 1 and s3.bucket_names() == {"web-uploads"}


def test_another_workspace_gets_404(alice_client, as_user, charlie, project, s3):
    bucket_id = create(alice_client, project).json()["id"]
    outsider = as_user(charlie)
    assert outsider.get(url(project)).status_code == 404
    assert create(outsider, project, "mine").status_code == 404
    assert outsider.delete(url(project, f"/{bucket_id}?force=true")).status_code == 404
    # nor through a project of their own workspace
    theirs = ProjectFactory(workspace=charlie.memberships.get().workspace, slug="theirs")
    resp = outsider.delete(f"/v1/orgs/charlies/projects/{theirs.pk}/buckets/{bucket_id}?force=true")
    assert resp.status_code == 404
    assert Bucket.objects.count() == 1 and s3.bucket_names() == {"web-uploads"}


def test_developers_read_but_cannot_create_or_delete(alice_client, as_user, bob, project, s3):
    bucket_id = create(alice_client, project).json()["id"]
    developer = as_user(bob)
    assert developer.get(url(project)).status_code == 200
    assert create(developer, project, "mine").status_code == 403
    assert developer.delete(url(project, f"/{bucket_id}?force=true")).status_code == 403
    assert Bucket.objects.count() == 1


def test_not_configured_is_409_naming_the_setting(alice_client, project, settings):
    settings.BUCKETS_S3_ENDPOINT = ""
    resp = create(alice_client, project)
    assert resp.status_code == 409
    body = resp.json()
    assert body["code"] == "addon_unavailable" and "BUCKETS_S3_ENDPOINT" in body["message"]
    assert body["details"]["setting"] == "BUCKETS_S3_ENDPOINT"
    assert alice_client.get(url(project)).json() == {"items": [], "nextCursor": None}
    assert not Bucket.objects.exists()


def test_an_endpoint_without_iam_is_409_naming_the_setting(alice_client, project, s3, settings, httpserver):
    httpserver.expect_request("/").respond_with_data("<html>not IAM</html>", status=404)
    settings.BUCKETS_S3_IAM_ENDPOINT = httpserver.url_for("/")
    resp = create(alice_client, project)
    assert resp.status_code == 409, resp.json()
    assert resp.json()["code"] == "addon_unavailable" and resp.json()["details"]["setting"] == "BUCKETS_S3_IAM_ENDPOINT"
    assert not Bucket.objects.exists() and s3.bucket_names() == set()


def test_an_endpoint_that_does_not_answer_is_503(alice_client, project, s3, settings):
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    settings.BUCKETS_S3_ENDPOINT = f"http://127.0.0.1:{port}"
    settings.BUCKETS_S3_TIMEOUT_SECONDS = 2
    resp = create(alice_client, project)
    assert resp.status_code == 503 and resp.json()["code"] == "storage_unavailable"
    assert not Bucket.objects.exists()


def test_builds_and_instances_get_the_bucket_as_managed_variables(alice_client, project, s3):
    first = create(alice_client, project, "uploads").json()
    second = create(alice_client, project, "backups").json()
    env = env_resolve(project=project, environment="production", branch="main")
    assert env["S3_BUCKET"] == "web-uploads" and env["S3_ENDPOINT"] == s3.endpoint and env["S3_REGION"] == "us-east-1"
    assert env["AWS_ACCESS_KEY_ID"] == first["credentials"]["accessKeyId"]
    assert env["AWS_SECRET_ACCESS_KEY"] == first["credentials"]["secretAccessKey"]
    assert env["BACKUPS_S3_BUCKET"] == "web-backups"  # the second is prefixed with its name
    assert env["BACKUPS_AWS_ACCESS_KEY_ID"] == second["credentials"]["accessKeyId"]
    from platform_app.services.resources.managed import managed_endpoints

    assert managed_endpoints(project=project) == ()  # reached through the egress, no sandbox endpoint


def test_a_deleted_projects_buckets_are_reaped(alice_client, project, s3):
    create(alice_client, project)
    user = Bucket.objects.get().iam_user
    s3.as_key(create(alice_client, project, "more").json()["credentials"]).put_object(
        Bucket="web-more", Key="a", Body=b"a")
    assert alice_client.delete(f"/v1/orgs/acme/projects/{project.pk}").status_code in (200, 204)
    assert Bucket.objects.filter(project__isnull=True).count() == 2  # kept until the endpoint forgot them
    assert buckets_reap() == 2
    assert not Bucket.objects.exists() and s3.bucket_names() == set() and user not in s3.iam_users()


def test_a_half_made_bucket_is_reaped(project, s3, travel):
    bucket = Bucket.objects.create(project=project, label="half", name="web-half", endpoint=s3.endpoint,
                                   region="us-east-1", iam_user="bucket-half", made=True)
    s3.admin().create_bucket(Bucket="web-half")
    s3.admin("iam").create_user(UserName="bucket-half")
    assert bucket_services.buckets_reap() == 0  # may still be in the making
    travel(11 * 60)
    assert bucket_services.buckets_reap() == 1
    assert s3.bucket_names() == set() and s3.iam_users() == {"platform-admin"} and not Bucket.objects.exists()
