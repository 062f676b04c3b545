"""Celery entry points of dedicated databases (docs/databases.md): each task carries the name of the service it
calls (platform_app/services/resources/dedicated_dbs.py). The services hold the lease on the row, so a task
delivered twice does the work once."""
from celery import shared_task

from platform_app.services.resources import dedicated_dbs

OPTIONS = {"acks_late": True, "ignore_result": True}


@shared_task(**OPTIONS, name="platform_app.tasks.dedicated_dbs.database_provision")
def database_provision(db_id: str) -> str | None:
    return dedicated_dbs.database_provision(db_id=db_id)


@shared_task(**OPTIONS, name="platform_app.tasks.dedicated_dbs.database_backup")
def database_backup(backup_id: str) -> str | None:
    return dedicated_dbs.database_backup(backup_id=backup_id)


@shared_task(**OPTIONS, name="platform_app.tasks.dedicated_dbs.database_restore_run")
def database_restore_run(db_id: str) -> str | None:
    return dedicated_dbs.database_restore_run(db_id=db_id)


@shared_task(**OPTIONS, name="platform_app.tasks.dedicated_dbs.database_teardown")
def database_teardown(db_id: str, role: str, databases: list) -> None:
    dedicated_dbs.database_teardown(db_id=db_id, role=role, databases=databases)


@shared_task(**OPTIONS, name="platform_app.tasks.dedicated_dbs.dedicated_dbs_sweep")
def dedicated_dbs_sweep() -> dict:
    """Beat (DEDICATED_DB_SWEEP_INTERVAL_SECONDS): due backups, replaced and orphaned databases, lost jobs."""
    return dedicated_dbs.dedicated_dbs_sweep()
