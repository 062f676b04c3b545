"""Factories of graduations (exports) and redemptions."""
import hashlib
from datetime import timedelta

import factory
from django.utils import timezone
from factory.django import DjangoModelFactory

from platform_app.models import Graduation, GraduationRedemption
from platform_app.services.identity.keys import sha256_hex
from tests.factories import WorkspaceFactory
from tests.platform_app.projects.factories import ProjectFactory


class GraduationFactory(DjangoModelFactory[Graduation]):
    """`GraduationFactory(raw="svcg_...")` keeps the hash of that code."""

    class Meta:
        model = Graduation
        exclude = ("raw",)

    project = factory.SubFactory(ProjectFactory)
    workspace = factory.LazyAttribute(lambda o: o.project.workspace)
    raw = factory.Sequence(lambda n: f"svcg_code{n:08d}")
    code_hash = factory.LazyAttribute(lambda o: sha256_hex(o.raw))
    bundle = "svcgrad1.grd_x.e30.sig"
    bundle_sha256 = factory.LazyAttribute(lambda o: hashlib.sha256(o.bundle.encode()).hexdigest())
    expires_at = factory.LazyFunction(lambda: timezone.now() + timedelta(hours=24))


class GraduationRedemptionFactory(DjangoModelFactory[GraduationRedemption]):
    class Meta:
        model = GraduationRedemption

    bundle_id = factory.Sequence(lambda n: f"grd_redeemed{n:08d}")
    origin = "https://platform.example.com"
    workspace = factory.SubFactory(WorkspaceFactory)
