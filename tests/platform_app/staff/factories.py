"""Incidents and status probe samples."""
from datetime import timedelta

import factory
from django.utils import timezone
from factory.django import DjangoModelFactory

from platform_app.models import Incident, IncidentUpdate, ProbeHour, ProbeSample


class IncidentFactory(DjangoModelFactory[Incident]):
    class Meta:
        model = Incident

    title = factory.Sequence(lambda n: f"Incident {n}")
    impact = "minor"
    components = factory.LazyFunction(lambda: ["builds"])


class IncidentUpdateFactory(DjangoModelFactory[IncidentUpdate]):
    class Meta:
        model = IncidentUpdate

    incident = factory.SubFactory(IncidentFactory)
    status = "investigating"
    message = "We are looking into it."


class ProbeSampleFactory(DjangoModelFactory[ProbeSample]):
    class Meta:
        model = ProbeSample

    probe = "api"
    at = factory.Sequence(lambda n: timezone.now().replace(second=0, microsecond=0) - timedelta(minutes=n))
    good = True
    latency_ms = 12


class ProbeHourFactory(DjangoModelFactory[ProbeHour]):
    class Meta:
        model = ProbeHour

    probe = "api"
    hour = factory.Sequence(lambda n: timezone.now().replace(minute=0, second=0, microsecond=0)
                            - timedelta(hours=n))
    samples = 60
    good = 60
    p95_ms = 20
