"""Factories of buckets (rows only: the bucket tests make real ones through the API)."""
import factory
from factory.django import DjangoModelFactory

from platform_app.models import Bucket
from platform_app.services.env.crypto import encrypt
from tests.platform_app.projects.factories import ProjectFactory


class BucketFactory(DjangoModelFactory[Bucket]):
    class Meta:
        model = Bucket
        exclude = ("raw",)

    project = factory.SubFactory(ProjectFactory)
    label = factory.Sequence(lambda n: f"files{n}")
    name = factory.LazyAttribute(lambda o: f"{o.project.slug}-{o.label}")
    endpoint = "https://s3.example.com"
    region = "us-east-1"
    status = Bucket.Status.READY
    made = True
    iam_user = factory.LazyAttribute(lambda o: f"bucket-{o.name}")
    access_key_id = factory.Sequence(lambda n: f"AKIAEXAMPLE{n:08d}")
    raw = "secret-access-key-example"
    secret_encrypted = factory.LazyAttribute(lambda o: encrypt(o.raw))
