"""Sign-up, sign-in, refresh, sign-out, me, sessions, stream tokens, introspection."""
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from config.inputs import InputSerializer, validated
from platform_app.api.base import PlatformView, cursor_page, endpoint
from platform_app.authentication import request_credential
from platform_app.api.identity.serializers import (AuthResultSerializer, SessionSerializer, UserSerializer,
                                          WorkspaceWithRoleSerializer)
from platform_app.models import AuthSession
from platform_app.services.identity import auth as auth_services
from platform_app.services.identity.stream_tokens import stream_token_issue
from platform_app.services.identity.mfa import sign_in_second_factor
from platform_app.services.teams.workspaces import workspaces_of
from platform_app.services.identity.selectors import auth_sessions_of


# Sign-up / sign-in / refresh / sign-out ----------------------------------------------

class SignUpInput(InputSerializer):
    email = serializers.EmailField(max_length=254)
    password = serializers.CharField(max_length=256, trim_whitespace=False)
    name = serializers.CharField(max_length=150, required=False, allow_blank=True, default="")


class SignInInput(InputSerializer):
    email = serializers.EmailField(max_length=254)
    password = serializers.CharField(max_length=256, trim_whitespace=False)
    totp_code = serializers.CharField(max_length=16, required=False, allow_blank=True)


class RefreshInput(InputSerializer):
    refresh_token = serializers.CharField(max_length=200)


class SignOutInput(InputSerializer):
    refresh_token = serializers.CharField(max_length=200, required=False)


def _user_agent(request) -> str:
    return request.META.get("HTTP_USER_AGENT", "")


class SignUpView(PlatformView):
    @endpoint(public=True, status=201, request=SignUpInput, response=AuthResultSerializer, summary="Create an account")
    def post(self, request):
        data = validated(SignUpInput, request)
        user = auth_services.user_sign_up(**data)
        issued = auth_services.session_start(user=user, ip=self.ip, user_agent=_user_agent(request))
        return Response(AuthResultSerializer(issued).data, status=201)


class SignInView(PlatformView):
    @endpoint(public=True, request=SignInInput, response=AuthResultSerializer, summary="Sign in", errors=(429,),
              description="An account with a confirmed TOTP factor must send `totpCode` (401 `mfa_required`).")
    def post(self, request):
        v = validated(SignInInput, request)
        user = auth_services.user_authenticate(email=v["email"], password=v["password"], ip=self.ip)
        sign_in_second_factor(user=user, totp_code=v.get("totp_code"), ip=self.ip)
        issued = auth_services.session_start(user=user, ip=self.ip, user_agent=_user_agent(request))
        return Response(AuthResultSerializer(issued).data)


class RefreshView(PlatformView):
    @endpoint(public=True, request=RefreshInput, response=AuthResultSerializer, summary="Rotate a refresh token",
              description="The presented token is spent. Presenting a spent token again revokes its session.")
    def post(self, request):
        data = validated(RefreshInput, request)
        issued = auth_services.session_refresh(refresh_token=data["refresh_token"])
        return Response(AuthResultSerializer(issued).data)


class SignOutView(PlatformView):
    @endpoint(public=True, status=204, request=SignOutInput, response=None, summary="Sign out",
              description="Revokes the session of the bearer access token, or of `refreshToken`.")
    def post(self, request):
        data = validated(SignOutInput, request)
        session = None
        if self.actor and self.actor.session is not None:
            session = self.actor.session
        elif data.get("refresh_token"):
            session = auth_services.session_for_refresh_token(data["refresh_token"])
        elif not request.user.is_authenticated:
            from config.errors import Unauthenticated

            raise Unauthenticated("Send the access token or `refreshToken` of the session to end.")
        if session is not None:
            auth_services.session_revoke(session=session, reason="signed_out")
        return Response(status=204)


# Me and introspection ----------------------------------------------------------------

def _acting_as(actor) -> dict:
    token = actor.token if actor else None
    return {
        "type": actor.type if actor else "session",
        "token_id": token.pk if token else None,
        "scopes": sorted(actor.scopes) if actor else ["admin"],
        "org_id": token.workspace_id if token else None,
        "session_id": actor.session.pk if actor and actor.session is not None else None,
    }


class MeView(PlatformView):
    @endpoint(scope=None, summary="Who the credentials act as", response=inline_serializer("Me", {
        "user": UserSerializer(), "acting_as": serializers.DictField(),
        "workspaces": WorkspaceWithRoleSerializer(many=True)}))
    def get(self, request):
        memberships = workspaces_of(request.user)
        if self.actor and self.actor.workspace_id:
            memberships = memberships.filter(workspace_id=self.actor.workspace_id)
        return Response({
            "user": UserSerializer(request.user).data,
            "acting_as": _acting_as(self.actor),
            "workspaces": WorkspaceWithRoleSerializer(memberships, many=True).data,
        })


class IntrospectView(PlatformView):
    @endpoint(scope=None, summary="Describe the presented credential", response=inline_serializer("Introspection", {
        "active": serializers.BooleanField(), "type": serializers.CharField(), "user_id": serializers.CharField(),
        "scopes": serializers.ListField(child=serializers.CharField()), "org_id": serializers.CharField(allow_null=True),
        "expires_at": serializers.DateTimeField(allow_null=True)}))
    def get(self, request):
        actor = self.actor
        token = actor.token if actor else None
        return Response({
            "active": True,
            "type": actor.type if actor else "session",
            "user_id": request.user.pk,
            "token_id": token.pk if token else None,
            "name": token.name if token else None,
            "scopes": sorted(actor.scopes) if actor else ["admin"],
            "org_id": token.workspace_id if token else None,
            "expires_at": token.expires_at if token else None,
            "created_at": token.created_at if token else None,
        })


# Sessions -----------------------------------------------------------------------------

class SessionListView(PlatformView):
    @endpoint(scope="read", response=SessionSerializer(many=True), summary="Your sign-in sessions")
    def get(self, request):
        current = self.actor.session.pk if self.actor and self.actor.session is not None else None
        qs = auth_sessions_of(user=request.user)
        return cursor_page(request, qs, SessionSerializer, context={"current_session_id": current})


class SessionRevokeView(PlatformView):
    @endpoint(scope="admin", request=None, response=SessionSerializer, summary="Revoke one session")
    def post(self, request, session_id):
        session = get_object_or_404(AuthSession, pk=session_id, user=request.user)
        auth_services.session_revoke(session=session)
        return Response(SessionSerializer(session).data)


class SessionRevokeAllView(PlatformView):
    @endpoint(scope="admin", request=None, summary="Revoke every session but the current one",
              response=inline_serializer("RevokedCount", {"revoked": serializers.IntegerField()}))
    def post(self, request):
        keep = self.actor.session if self.actor else None
        count = auth_services.sessions_revoke_all(user=request.user, keep=keep)
        return Response({"revoked": count})


class StreamTokenView(PlatformView):
    @endpoint(scope="read", request=None, summary="A short-lived token for EventSource log streams",
              description="Pass it as `?token=` on `.../logs/stream`; browsers cannot set headers on EventSource. "
                          "It acts with the scopes and workspace binding of the credential that made it, lives "
                          "`expiresIn` seconds (60), and stops working when that API token or session is revoked.",
              response=inline_serializer("StreamToken", {"token": serializers.CharField(),
                                                         "expires_in": serializers.IntegerField()}))
    def post(self, request):
        actor = self.actor
        token, ttl = stream_token_issue(user=request.user, scopes=actor.scopes if actor else {"admin"},
                                        credential=request_credential(request),
                                        workspace_id=actor.workspace_id if actor else None)
        return Response({"token": token, "expires_in": ttl})
