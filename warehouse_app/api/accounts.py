"""Sign-up, login cookies, logout, me, password, dashboard figures, billing usage."""
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from config import ratelimit
from config.ids import new_id
from config.inputs import InputSerializer, validated
from platform_app.services.identity import auth as auth_services
from platform_app.services.identity.auth import User
from warehouse_app.api.base import WarehouseView, errors
from warehouse_app.authentication import SESSION_KIND, clear_session_cookies, set_session_cookies
from warehouse_app.models import WarehouseProfile
from warehouse_app.services.accounts import operated_facilities, profile_of
from warehouse_app.services.allowances import usage_report
from warehouse_app.services.workspace import dashboard_stats

OK = OpenApiResponse(description="OK")


class SignupInput(InputSerializer):
    """A platform account: the sign-up service applies the platform's rules (password strength, unique email)."""
    email = serializers.EmailField(max_length=254)
    password = serializers.CharField(max_length=256, trim_whitespace=False)
    name = serializers.CharField(max_length=150, required=False, allow_blank=True, default="")


class LoginInput(InputSerializer):
    email = serializers.EmailField(max_length=254)
    password = serializers.CharField(max_length=256, trim_whitespace=False)


class PasswordInput(InputSerializer):
    current_password = serializers.CharField(max_length=256, trim_whitespace=False)
    new_password = serializers.CharField(max_length=256, trim_whitespace=False)


def account(user) -> dict:
    profile = profile_of(user)
    return {"id": user.pk, "email": user.email, "name": user.name, "role": profile.role, "plan": profile.plan,
            "facilities": list(operated_facilities(user).values_list("slug", flat=True)[:100])
            if profile.role == "operator" else []}


def account_stand_in(data: dict) -> dict:
    """What a new account's sign-up answers, for an address that already has one (its owner is mailed)."""
    return {"id": new_id("usr"), "email": User.objects.normalize_email(data["email"]).lower(),
            "name": data.get("name", ""), "role": WarehouseProfile.Role.CUSTOMER,
            "plan": WarehouseProfile._meta.get_field("plan").default, "facilities": []}


class SignupView(WarehouseView):
    @extend_schema(request=SignupInput, responses={201: OK}, summary="Create an account")
    def post(self, request):
        data = validated(SignupInput, request)
        user = auth_services.user_sign_up_undisclosed(**data)
        return Response(account(user) if user else account_stand_in(data), status=201)


class LoginView(WarehouseView):
    authentication_classes = []  # logging in replaces whatever cookies were there

    @extend_schema(request=LoginInput, responses={200: OK, **errors(401, 429)},
                   summary="Exchange credentials for session cookies",
                   description="Sets `ws-access-token` (RS256 JWT) and `ws-refresh-token` (HttpOnly, SameSite=Lax) "
                               "and `ws-csrf-token`, whose value cookie-authenticated writes echo in `X-CSRF-Token`.")
    def post(self, request):
        data = validated(LoginInput, request)
        ip = ratelimit.client_ip(request)
        user = auth_services.user_authenticate(email=data["email"],
                                               password=data["password"], ip=ip)
        issued = auth_services.session_start(user=user, kind=SESSION_KIND, ip=ip,
                                             user_agent=request.META.get("HTTP_USER_AGENT", ""))
        response = Response({"user": account(user), "expires_in": issued.expires_in})
        set_session_cookies(response, issued)
        return response


class LogoutView(WarehouseView):
    session_required = True

    @extend_schema(request=None, responses={200: OK}, summary="End the session and clear the cookies")
    def post(self, request):
        auth_services.session_revoke(session=request.auth, reason="signed_out")
        response = Response({"signed_out": True})
        clear_session_cookies(response)
        return response


class MeView(WarehouseView):
    session_required = True

    @extend_schema(responses={200: OK}, summary="The current account")
    def get(self, request):
        return Response(account(request.user))


class PasswordView(WarehouseView):
    session_required = True

    @extend_schema(request=PasswordInput, responses={200: OK, **errors(429)},
                   summary="Change password (current one required; other sessions are signed out)")
    def post(self, request):
        data = validated(PasswordInput, request)
        auth_services.password_change(user=request.user, current_password=data["current_password"],
                                      new_password=data["new_password"], keep_session=request.auth,
                                      ip=ratelimit.client_ip(request))
        return Response({"changed": True})


class DashboardStatsView(WarehouseView):
    session_required = True

    @extend_schema(responses={200: OK}, summary="Dashboard figures of your account")
    def get(self, request):
        return Response(dashboard_stats(user=request.user))


class BillingUsageView(WarehouseView):
    session_required = True

    @extend_schema(responses={200: OK}, summary="This month's counters; whether allowances are enforced")
    def get(self, request):
        return Response(usage_report(user=request.user))
