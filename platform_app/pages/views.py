"""The site's home page. The dashboard's pages are split by area: identity.py (account), teams.py
(workspaces, members, tokens, audit), projects.py, deployments.py, env.py."""
from django.shortcuts import render


def home(request):
    return render(request, "home.html")
