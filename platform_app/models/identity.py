"""Users and sign-in sessions (shared identity for all three services)."""
from django.contrib.auth.models import AbstractBaseUser, BaseUserManager, PermissionsMixin
from django.db import models
from django.utils import timezone

from config.ids import PrefixedIdField

__all__ = ("User", "AuthSession", "RefreshToken")


class UserManager(BaseUserManager):
    use_in_migrations = True

    def _create(self, email, password, **extra):
        if not email:
            raise ValueError("An email is required.")
        user = self.model(email=self.normalize_email(email).lower(), **extra)
        user.set_password(password)
        user.save(using=self._db)
        return user

    def create_user(self, email, password=None, **extra):
        extra.setdefault("is_staff", False)
        extra.setdefault("is_superuser", False)
        return self._create(email, password, **extra)

    def create_superuser(self, email, password=None, **extra):
        extra.update(is_staff=True, is_superuser=True)
        return self._create(email, password, **extra)


class User(AbstractBaseUser, PermissionsMixin):
    """A person. Signs in with email; the same account works in all three services."""

    id = PrefixedIdField(prefix="usr")
    email = models.EmailField(unique=True)
    name = models.CharField(max_length=150, blank=True)
    is_active = models.BooleanField(default=True)
    is_staff = models.BooleanField(default=False)
    date_joined = models.DateTimeField(default=timezone.now)
    email_verified_at = models.DateTimeField(
        null=True, blank=True, help_text="when the address was proved by a link sent to it (or by a provider that "
                                         "vouches for it); null: unverified, invitations to it are withheld")

    objects = UserManager()
    USERNAME_FIELD = "email"
    EMAIL_FIELD = "email"
    REQUIRED_FIELDS = ["name"]

    class Meta:
        ordering = ("email",)

    def __str__(self):
        return self.email


class AuthSession(models.Model):
    """One signed-in device: backs refresh tokens and `/v1/auth/sessions`."""

    id = PrefixedIdField(prefix="ses")
    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="auth_sessions")
    kind = models.CharField(max_length=16, default="platform",
                            help_text="platform, or the kind a product registered (warehouse cookie sessions)")
    ip = models.CharField(max_length=64, blank=True)
    user_agent = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(default=timezone.now)
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_reason = models.CharField(max_length=64, blank=True)

    class Meta:
        ordering = ("-created_at",)
        indexes = [models.Index(fields=["user", "revoked_at"])]

    def __str__(self):
        return f"{self.id} ({self.user})"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None


class RefreshToken(models.Model):
    """An opaque refresh token, stored as a SHA-256 hash; rotated on every use."""

    session = models.ForeignKey(AuthSession, on_delete=models.CASCADE, related_name="refresh_tokens")
    token_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ("-created_at",)

    def __str__(self):
        return f"refresh token of {self.session_id}"
