"""Adapters of outside providers, each speaking its provider's documented wire format.

`git_host(name)` → the OAuth/REST adapter of a code host (git-a GitHub-style, git-b GitLab-style, git-c
Bitbucket-style); `oidc.OidcProvider` → the OpenID Connect identity provider `idp`.
"""
from platform_app.providers.git_hosts import GIT_HOSTS, git_host  # noqa: F401
