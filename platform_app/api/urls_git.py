"""Git provider connections and social sign-in (mounted under /v1/)."""
from django.urls import path

from platform_app.api.providers import git
from platform_app.api.identity import social

O = "orgs/<str:org_id>"

urlpatterns = [
    # Social sign-in
    path("auth/idp/start", social.SignInStartView.as_view(provider="idp")),
    path("auth/idp/callback", social.SignInCallbackView.as_view(provider="idp")),
    path("auth/git-a/start", social.SignInStartView.as_view(provider="git-a")),
    path("auth/git-a/sso/callback", social.SignInCallbackView.as_view(provider="git-a")),
    path("auth/git-b/start", social.SignInStartView.as_view(provider="git-b")),
    path("auth/git-b/sso/callback", social.SignInCallbackView.as_view(provider="git-b")),
    # Connecting providers
    path("auth/git-a/install", git.InstallView.as_view(provider="git-a")),
    path("auth/git-a/callback", git.GitAInstallCallbackView.as_view()),
    path("auth/git-a/user-link", git.GitAUserLinkView.as_view()),
    path("auth/git-a/user-callback", git.GitAUserCallbackView.as_view()),
    path("auth/git-b/install", git.InstallView.as_view(provider="git-b")),
    path("auth/git-b/callback", git.ConnectCallbackView.as_view(provider="git-b")),
    path("auth/git-c/install", git.InstallView.as_view(provider="git-c")),
    path("auth/git-c/callback", git.ConnectCallbackView.as_view(provider="git-c")),
    # Connections
    path(f"{O}/git/connections", git.ConnectionListView.as_view()),
    path(f"{O}/git/git-a/unclaimed-installations", git.UnclaimedInstallationsView.as_view()),
    path(f"{O}/git/git-a/claim", git.ClaimView.as_view()),
    path(f"{O}/git/<str:provider>/repos", git.RepoListView.as_view()),
    path(f"{O}/git/<str:provider>", git.ConnectionDeleteView.as_view()),
]
