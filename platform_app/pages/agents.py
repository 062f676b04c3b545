"""A workspace's node agents: the machines that run its long-running deployments, and join tokens."""
from django.contrib.auth.decorators import login_required
from django.shortcuts import render

from platform_app.pages.base import require, workspace_context
from platform_app.services.agents.agents import agent_invite_create, agent_join_command
from platform_app.services.deployments.listings import nodes_list, nodes_running_counts

STATUS_BADGES = {"online": "ok", "draining": "pending", "offline": "error"}


@login_required
def agents_page(request, org_id):
    """GET lists the nodes; POST (admin) makes a single-use join token, shown once with its command."""
    context = workspace_context(request, org_id)
    command = None
    if request.method == "POST":
        require(context, "admin")
        _, token = agent_invite_create(workspace=context["workspace"], actor=request.user)
        command = agent_join_command(token)
    nodes = nodes_list(workspace=context["workspace"])
    running = nodes_running_counts(nodes=nodes)
    for node in nodes:
        node.running, node.badge = running[node.pk], STATUS_BADGES.get(node.status, "canceled")
    context.update(tab="agents", nodes=nodes, command=command)
    return render(request, "platform_app/teams/agents.html", context, status=201 if command else 200)
