from django.db import models


class Role(models.TextChoices):
    OWNER = "owner"
    ADMIN = "admin"
    DEVELOPER = "developer"
    VIEWER = "viewer"
    BILLING = "billing"


class Scope(models.TextChoices):
    READ = "read"
    DEPLOY = "deploy"
    ENV_READ = "env:read"
    ENV_WRITE = "env:write"
    DOMAINS = "domains"
    BILLING = "billing"
    ADMIN = "admin"
