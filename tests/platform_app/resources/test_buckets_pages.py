"""The Buckets tab against moto's server: the list with usage, the create form showing the credentials once, delete
refused while the bucket holds objects and done with force once its name is typed back; developers read; other
workspaces see nothing; a platform without an endpoint says so."""
import pytest
from django.test import Client

from platform_app.models import Bucket
from tests.platform_app.projects.factories import ProjectFactory
from tests.platform_app.resources.s3_server import s3, s3_endpoint  # noqa: F401 - fixtures

pytestmark = pytest.mark.django_db


@pytest.fixture
def project(workspace):
    return ProjectFactory(workspace=workspace, name="Web", slug="web")


def browser(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


PAGE = "/dashboard/acme/projects/web/buckets/"


def test_create_shows_the_credentials_once_and_lists_usage(alice, project, s3):
    client = browser(alice)
    html = client.get(PAGE).content.decode()
    assert "No buckets yet." in html and "Create a bucket" in html and 'aria-current="page">Buckets<' in html
    resp = client.post(PAGE, {"name": "media"})
    assert resp.status_code == 200
    html = resp.content.decode()
    bucket = Bucket.objects.get()
    credentials = {"accessKeyId": bucket.access_key_id,
                   "secretAccessKey": html.split('id="bucket-secret-access-key">')[1].split("<")[0]}
    assert "web-media" in html and bucket.access_key_id in html and "will not be shown again" in html
    s3.as_key(credentials).put_object(Bucket="web-media", Key="a.txt", Body=b"12345")  # the secret shown works
    from platform_app.tasks.buckets import buckets_usage_refresh

    buckets_usage_refresh()
    html = client.get(PAGE).content.decode()
    assert credentials["secretAccessKey"] not in html and "web-media" in html and "5\xa0bytes" in html
    bad = client.post(PAGE, {"name": "Not_Valid"})
    assert bad.status_code == 400 and "lowercase letters" in bad.content.decode() and Bucket.objects.count() == 1


def test_delete_needs_force_and_the_name_for_a_bucket_with_objects(alice, project, s3):
    client = browser(alice)
    client.post(PAGE, {"name": "media"})
    bucket = Bucket.objects.get()
    s3.admin().put_object(Bucket="web-media", Key="a.txt", Body=b"x")
    action = f"/dashboard/acme/projects/web/buckets/{bucket.pk}/delete"
    resp = client.post(action, follow=True)
    assert "holds objects" in resp.content.decode() and Bucket.objects.exists()
    resp = client.post(action, {"force": "on", "confirm": "wrong"}, follow=True)
    assert "Type the bucket" in resp.content.decode() and Bucket.objects.exists()
    resp = client.post(action, {"force": "on", "confirm": "web-media"}, follow=True)
    assert "deleted with its 1 objects" in resp.content.decode()
    assert not Bucket.objects.exists() and s3.bucket_names() == set()


def test_developers_read_and_outsiders_get_404(alice, bob, charlie, project, s3):
    browser(alice).post(PAGE, {"name": "media"})
    bucket = Bucket.objects.get()
    developer = browser(bob)
    html = developer.get(PAGE).content.decode()
    assert "web-media" in html and "Create a bucket" not in html and "Delete" not in html
    assert developer.post(PAGE, {"name": "other"}).status_code == 403
    assert developer.post(f"/dashboard/acme/projects/web/buckets/{bucket.pk}/delete",
                          {"force": "on", "confirm": "web-media"}).status_code == 403
    assert browser(charlie).get(PAGE).status_code == 404
    assert Bucket.objects.count() == 1


def test_not_configured_says_which_setting(alice, project, settings):
    settings.BUCKETS_S3_ENDPOINT = ""
    html = browser(alice).get(PAGE).content.decode()
    assert "BUCKETS_S3_ENDPOINT" in html and "Create a bucket" not in html
