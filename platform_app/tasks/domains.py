"""Celery entry points of custom domains."""
from celery import shared_task

from platform_app.services.domains import caddy as caddy_services
from platform_app.services.domains import domains as services


@shared_task(acks_late=True, ignore_result=True, name="platform_app.tasks.domains.domains_recheck")
def domains_recheck() -> int:
    """Beat: check due domains again (backoff while pending, daily once verified)."""
    return services.domains_recheck()


@shared_task(acks_late=True, ignore_result=True, name="platform_app.tasks.domains.caddy_sync")
def caddy_sync() -> bool:
    """After a domain change, and on beat: load the platform's configuration into Caddy (if configured)."""
    return caddy_services.caddy_sync()


@shared_task(acks_late=True, ignore_result=True, name="platform_app.tasks.domains.domain_claims_expire")
def domain_claims_expire() -> int:
    """Beat: remove pending domains never verified within DOMAIN_CLAIM_EXPIRY_DAYS."""
    return services.domain_claims_expire()
