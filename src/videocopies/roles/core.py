"""The core role's composition root: checks the schema, then serves the Job API, the edge and
control APIs and runs the sweeps (runtime/core_process.py) over the PostgreSQL container.
Its variables are read by settings/core.py."""

from __future__ import annotations

import logging
import sys

import attrs
from dependency_injector import providers

from videocopies.adapters.postgres import migrate
from videocopies.application.ports import ListedStore, ObjectStore
from videocopies.roles.containers import PostgresService, postgres_service
from videocopies.roles.payments import attach_provider
from videocopies.runtime import heap
from videocopies.runtime.core_process import Core, database_unavailable
from videocopies.runtime.core_process import core_server as server
from videocopies.runtime.role_run import run_role
from videocopies.settings import Settings
from videocopies.settings.core import CoreSettings, Database
from videocopies.settings.links import S3Link
from videocopies.telegram_limits import MediaLimits

__all__ = ["Core", "build", "database_unavailable", "main", "server"]
log = logging.getLogger("videocopies.core")


def build(
    settings: Settings, database_url: str, pool_size: int = 10, listen_url: str | None = None, direct: bool = False,
    lease_pool_size: int | None = None, safety_poll_s: float = 1.0, wait_s: float = 30.0,
) -> PostgresService:
    """Refuses a missing, empty or incompatible database before building anything.

    `database_url` may point at PgBouncer; `listen_url` must reach PostgreSQL itself (LISTEN
    does not survive transaction pooling); `direct` lets psycopg prepare statements, which
    only a connection straight to PostgreSQL can carry."""
    schema = migrate.check(database_url)
    return postgres_service(settings, Database(
        database_url, listen_url, direct, pool_size, lease_pool_size or 0, safety_poll_s, wait_s
    ).gateways() | {"jobs_keep_seed": schema.jobs_keep_seed})


def limit_media(container: PostgresService, limits: MediaLimits) -> None:
    """The bot refuses videos by the limits of the Bot API server in use."""
    container.bot.bot_settings.override(providers.Object(attrs.evolve(
        container.bot.bot_settings(), max_video_bytes=limits.max_bytes, max_video_seconds=limits.max_seconds,
        max_pixel_rate=limits.max_pixel_rate,
    )))


def object_store(s3: S3Link | None) -> ObjectStore | None:
    """The store the Job API signs URLs for (none: workers share a directory with core)."""
    if s3 is None:
        return None
    from videocopies.adapters.objectstore.s3 import S3ObjectStore

    return S3ObjectStore(s3.bucket, s3.endpoint, s3.access_key, s3.secret_key)


def lifecycle_store(settings: CoreSettings, store: ObjectStore | None) -> ListedStore | None:
    """The store the object lifecycle deletes from: S3, or the shared VIDEOCOPIES_STORE_DIR
    (as all-in-one's workers and edge use; the Job API signs no URLs for it)."""
    if store is not None or settings.store_dir is None:
        return store  # type: ignore[return-value]
    from videocopies.adapters.objectstore.filesystem import FilesystemObjectStore

    return FilesystemObjectStore(settings.store_dir)


def main(database_url: str, host: str | None = None, port: int | None = None) -> int:
    settings = CoreSettings.from_env(database_url)
    try:
        schema = migrate.check(database_url)
        container = postgres_service(
            settings.service, settings.database.gateways() | {"jobs_keep_seed": schema.jobs_keep_seed}
        )
    except migrate.SchemaError as refused:
        print(f"videocopies core: {refused}", file=sys.stderr)
        return 2
    bot = attach_provider(container, settings.bot)
    limit_media(container, settings.limits)
    store = object_store(settings.s3)
    core = Core(container, store, schema, lease_sweep_s=settings.lease_sweep_s, payment_bot=bot,
                objects_store=lifecycle_store(settings, store), outbox_max_attempts=settings.outbox_max_attempts,
                relocation_hosts=settings.relocation_hosts)
    host, port = host or settings.host, port or settings.port
    log.info("core serving on %s:%d%s", host, port, " (TLS)" if settings.tls else "")
    heap.settle()
    run_role(server(core, host, port, settings.tls).serve())
    return 0
