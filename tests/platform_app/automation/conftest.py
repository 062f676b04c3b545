"""What the automation tests share: an app served through the edge by an agent's instance (a pytest-httpserver
stands in for the app process), and a real SMTP server (aiosmtpd) behind Django's smtp backend."""
import socket

import pytest

from platform_app.models import Deployment
from tests.platform_app.agents.factories import AgentNodeFactory, InstanceFactory
from tests.platform_app.projects.factories import ProjectFactory


@pytest.fixture
def served_project(workspace, httpserver):
    """A project whose production deployment runs on an online agent node: the edge proxies its requests to the
    instance, which is `httpserver`."""
    project = ProjectFactory(workspace=workspace, name="App")
    deployment = Deployment.objects.create(project=project, env="production", branch="main",
                                           status=Deployment.Status.READY, artifact_path="runtime",
                                           snapshot={"start": "node server.js"})
    node = AgentNodeFactory(workspace=workspace, host="127.0.0.1", raw="agn_automation_node")
    InstanceFactory(deployment=deployment, node=node, status="running", port=httpserver.port)
    project.production_deployment = deployment
    project.save()
    return project


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def smtp(settings):
    """A real SMTP server on loopback; Django's smtp backend points at it. `smtp` is the list of messages."""
    from aiosmtpd.controller import Controller
    from aiosmtpd.handlers import Message

    received = []

    class Capture(Message):
        def handle_message(self, message):
            received.append(message)

    port = free_port()
    controller = Controller(Capture(), hostname="127.0.0.1", port=port)
    controller.start()
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT, settings.EMAIL_USE_TLS = "127.0.0.1", port, False
    yield received
    controller.stop()
