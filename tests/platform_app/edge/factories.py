"""Factories of the edge area: firewall rules and events, analytics settings and events."""
import factory
from django.utils import timezone
from factory.django import DjangoModelFactory

from platform_app.models import (AnalyticsEvent, AnalyticsSettings, AnalyticsVisitor, AnalyticsVitalHour, FirewallEvent,
                                 FirewallRule)
from tests.platform_app.projects.factories import ProjectFactory


class FirewallRuleFactory(DjangoModelFactory[FirewallRule]):
    """An enabled deny rule on one path unless told otherwise."""

    class Meta:
        model = FirewallRule

    project = factory.SubFactory(ProjectFactory)
    name = factory.Sequence(lambda n: f"rule {n}")
    action = FirewallRule.Action.DENY
    conditions = factory.LazyFunction(lambda: [{"field": "path", "op": "prefix", "value": "/admin"}])


class FirewallEventFactory(DjangoModelFactory[FirewallEvent]):
    class Meta:
        model = FirewallEvent

    project = factory.SubFactory(ProjectFactory)
    rule_id = "fwr_test"
    action = "deny"
    ip = "203.0.113.9"
    method = "GET"
    path = "/admin"
    at = factory.LazyFunction(timezone.now)


class AnalyticsSettingsFactory(DjangoModelFactory[AnalyticsSettings]):
    class Meta:
        model = AnalyticsSettings

    project = factory.SubFactory(ProjectFactory)
    enabled = True


class AnalyticsEventFactory(DjangoModelFactory[AnalyticsEvent]):
    class Meta:
        model = AnalyticsEvent

    project = factory.SubFactory(ProjectFactory)
    type = AnalyticsEvent.Type.PAGEVIEW
    path = "/"
    visitor = factory.Sequence(lambda n: f"v{n:031d}")
    at = factory.LazyFunction(timezone.now)


class AnalyticsVisitorFactory(DjangoModelFactory[AnalyticsVisitor]):
    class Meta:
        model = AnalyticsVisitor

    project = factory.SubFactory(ProjectFactory)
    day = factory.LazyFunction(lambda: timezone.now().date())
    visitor = factory.Sequence(lambda n: f"r{n:031d}")
    page_views = 1
    paths = factory.LazyFunction(lambda: {"/": 1})
    first_at = factory.LazyFunction(timezone.now)


class AnalyticsVitalHourFactory(DjangoModelFactory[AnalyticsVitalHour]):
    class Meta:
        model = AnalyticsVitalHour

    project = factory.SubFactory(ProjectFactory)
    hour = factory.LazyFunction(lambda: timezone.now().replace(minute=0, second=0, microsecond=0))
    path = "/"
    name = "LCP"
    histogram = factory.LazyFunction(lambda: {"1200": 2})
    samples = 2
