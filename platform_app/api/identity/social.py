"""Social sign-in through idp (OpenID Connect), git-a and git-b (OAuth)."""
from rest_framework.response import Response

from platform_app.api.identity.auth import _user_agent
from platform_app.api.base import PlatformView, endpoint
from platform_app.api.providers.git import (CALLBACK, CALLBACK_ERRORS, PROVIDER_ERRORS, RETURN_TO, UrlSerializer,
                                           callback_code, provider_error, redirect_uri)
from platform_app.api.identity.serializers import AuthResultSerializer
from platform_app.providers import git_host
from platform_app.providers.oidc import OidcProvider
from platform_app.services.identity.auth import session_start
from platform_app.services.identity.oauth_state import (state_binding, state_consume, state_cookie_set,
                                                        state_start)
from platform_app.services.identity.social import identity_sign_in


class SignInStartView(PlatformView):
    provider = ""

    @endpoint(public=True, response=UrlSerializer, errors=PROVIDER_ERRORS,  # idp: its discovery document is fetched
              summary="Start social sign-in (answers the provider URL)",
              parameters=[RETURN_TO])
    def get(self, request):
        return_to = request.query_params.get("returnTo", "")
        if self.provider == "idp":
            idp = OidcProvider()
            idp.config  # 503 before anything is written when not configured
            row, state = state_start(purpose="signin", provider="idp", return_to=return_to, pkce=True)
            callback = redirect_uri("idp/callback")
            url = idp.authorize_url(state=state, redirect_uri=callback, nonce=row.nonce,
                                    code_verifier=row.code_verifier)
        else:
            host = git_host(self.provider)
            host.require_configured()
            row, state = state_start(purpose="signin", provider=self.provider, return_to=return_to)
            callback = redirect_uri(f"{self.provider}/sso/callback")
            url = host.authorize_url(state=state, redirect_uri=callback)
        return state_cookie_set(Response({"url": url, "state": state}), row, callback_url=callback)


class SignInCallbackView(PlatformView):
    provider = ""

    @endpoint(public=True, response=AuthResultSerializer, parameters=CALLBACK, errors=CALLBACK_ERRORS,
              summary="Social sign-in callback: signs in (or creates) the user and links the identity")
    def get(self, request):
        code = callback_code(request)
        row = state_consume(value=request.query_params.get("state", ""), purpose="signin", provider=self.provider,
                            binding=state_binding(request))
        provider_error(request)
        if self.provider == "idp":
            info = OidcProvider().sign_in(code=code, redirect_uri=redirect_uri("idp/callback"),
                                          code_verifier=row.code_verifier, nonce=row.nonce)
        else:
            host = git_host(self.provider)
            info = host.user(host.exchange_code(code=code, redirect_uri=redirect_uri(f"{self.provider}/sso/callback")))
        user = identity_sign_in(provider=self.provider, info=info)
        issued = session_start(user=user, ip=self.ip, user_agent=_user_agent(request))
        return Response({**AuthResultSerializer(issued).data, "return_to": row.return_to or None})
