"""config/serializers.py answers exactly as DRF's own ModelSerializer does, on the plain path (attributes read
directly) and on the values it hands back to DRF (a timestamp in another zone, a method, a dotted source)."""
from datetime import UTC, datetime, timedelta, timezone

import pytest
from rest_framework import serializers

from config.serializers import ModelSerializer
from platform_app.models import Deployment
from tests.platform_app.deployments.factories import DeploymentFactory

pytestmark = pytest.mark.django_db

FIELDS = ("id", "project_id", "env", "branch", "status", "created_at", "started_at", "finished_at", "artifact_bytes",
          "snapshot", "log_lines_archived", "error_message", "trigger_label", "duration", "project_slug", "label")


def _declared():
    return {"project_id": serializers.CharField(), "trigger_label": serializers.CharField(source="get_trigger_display"),  # a method: called
            "duration": serializers.IntegerField(source="log_lines_archived"),
            "project_slug": serializers.CharField(source="project.slug"),
            "label": serializers.SerializerMethodField(),
            "get_label": lambda self, obj: f"{obj.env}/{obj.status}"}


class Meta:
    model = Deployment
    fields = FIELDS


Fast = type("Fast", (ModelSerializer,), {**_declared(), "Meta": Meta})
Drf = type("Drf", (serializers.ModelSerializer,), {**_declared(), "Meta": Meta})


def test_answers_are_drf_answers_for_every_kind_of_value():
    deployment = DeploymentFactory(status="ready", artifact_bytes=1234, snapshot={"env": {"hash": "x"}, "n": [1]},
                                   started_at=datetime(2026, 11, 29, 10, 0, 0, 123456, tzinfo=UTC))
    deployment.finished_at = datetime(2026, 11, 29, 12, 30, tzinfo=timezone(timedelta(hours=2)))  # another zone
    deployment.error_message = ""
    plain = DeploymentFactory(status="queued", snapshot={})  # None timestamps and sizes
    for instance in (deployment, plain):
        assert Fast(instance).data == Drf(instance).data
    assert Fast([deployment, plain], many=True).data == Drf([deployment, plain], many=True).data
    data = Fast(deployment).data
    assert data["finished_at"] == "2026-11-29T10:30:00.000000Z" and data["started_at"].endswith(".123456Z")
    assert data["trigger_label"] == "Manual" and data["label"] == "preview/ready" and data["artifact_bytes"] == 1234
