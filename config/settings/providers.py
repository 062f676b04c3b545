"""Outside identity and code-hosting providers. Defaults are the real providers' documented endpoints;
a provider without a client id is "not configured" (503 provider_not_configured)."""
from .core import env

GIT_PROVIDERS = {
    "git-a": {  # GitHub-style: app installations plus OAuth
        "client_id": env("GIT_A_CLIENT_ID", default=""), "client_secret": env("GIT_A_CLIENT_SECRET", default=""),
        "authorize_url": env("GIT_A_AUTHORIZE_URL", default="https://github.com/login/oauth/authorize"),
        "token_url": env("GIT_A_TOKEN_URL", default="https://github.com/login/oauth/access_token"),
        "api_url": env("GIT_A_API_URL", default="https://api.github.com"),
        "web_url": env("GIT_A_WEB_URL", default="https://github.com"),
        "install_url": env("GIT_A_INSTALL_URL", default="https://github.com/apps/{app}/installations/new"),
        "app_slug": env("GIT_A_APP_SLUG", default=""),
        "scope": "read:user user:email repo",
    },
    "git-b": {  # GitLab-style OAuth
        "client_id": env("GIT_B_CLIENT_ID", default=""), "client_secret": env("GIT_B_CLIENT_SECRET", default=""),
        "authorize_url": env("GIT_B_AUTHORIZE_URL", default="https://gitlab.com/oauth/authorize"),
        "token_url": env("GIT_B_TOKEN_URL", default="https://gitlab.com/oauth/token"),
        "api_url": env("GIT_B_API_URL", default="https://gitlab.com/api/v4"),
        "web_url": env("GIT_B_WEB_URL", default="https://gitlab.com"),
        "scope": "read_user read_repository api",
    },
    "git-c": {  # Bitbucket-style OAuth
        "client_id": env("GIT_C_CLIENT_ID", default=""), "client_secret": env("GIT_C_CLIENT_SECRET", default=""),
        "authorize_url": env("GIT_C_AUTHORIZE_URL", default="https://bitbucket.org/site/oauth2/authorize"),
        "token_url": env("GIT_C_TOKEN_URL", default="https://bitbucket.org/site/oauth2/access_token"),
        "api_url": env("GIT_C_API_URL", default="https://api.bitbucket.org/2.0"),
        "web_url": env("GIT_C_WEB_URL", default="https://bitbucket.org"),
        "scope": "account email repository",
    },
}
# OpenID Connect identity provider: discovery at <issuer>/.well-known/openid-configuration.
IDP = {
    "issuer": env("IDP_ISSUER", default=""),
    "client_id": env("IDP_CLIENT_ID", default=""),
    "client_secret": env("IDP_CLIENT_SECRET", default=""),
    "scope": "openid email profile",
}
OAUTH_STATE_TTL_SECONDS = env.int("OAUTH_STATE_TTL_SECONDS", default=600)
# Origins a `returnTo` may point at, besides SITE_URL's own.
ALLOWED_RETURN_ORIGINS = env.list("ALLOWED_RETURN_ORIGINS", default=[])
PROVIDER_TIMEOUT_SECONDS = env.float("PROVIDER_TIMEOUT_SECONDS", default=10.0)

# git-a (GitHub-style) webhooks: x-hub-signature-256 is checked with this secret.
GIT_A_WEBHOOK_SECRET = env("GIT_A_WEBHOOK_SECRET", default="")
