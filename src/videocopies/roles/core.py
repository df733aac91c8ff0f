"""The core role's composition root: checks the schema, then runs core's background work.

Core's HTTP API joins this process in a later step; today core runs the sweeps that keep
the queue and the ledger moving (expired leases back to the queue, expired coin lots).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys

import uvloop

from videocopies.adapters.postgres import migrate
from videocopies.roles.containers import PostgresService
from videocopies.settings import Settings

log = logging.getLogger("videocopies.core")


def build(
    settings: Settings,
    database_url: str,
    pool_size: int = 10,
    listen_url: str | None = None,
    direct: bool = False,
) -> PostgresService:
    """Refuses a missing, empty or incompatible database before building anything.

    `database_url` may point at PgBouncer; `listen_url` must reach PostgreSQL itself (LISTEN
    does not survive transaction pooling); `direct` lets psycopg prepare statements, which
    only a connection straight to PostgreSQL can carry."""
    migrate.check(database_url)
    container = PostgresService(settings=settings)
    container.gateways.config.from_dict(
        {"database_url": database_url, "pool_size": pool_size, "listen_url": listen_url, "direct": direct}
    )
    return container


async def run(container: PostgresService, stop: asyncio.Event, lease_sweep_s: float = 1.0) -> None:
    pool = container.gateways.pool()
    await pool.open(wait=True, timeout=30)
    notifier = container.gateways.notifier()
    await notifier.start()
    expire_leases = container.use_cases.expire_leases()
    expire_coins = container.use_cases.expire_coins()
    try:
        ticks = 0
        while not stop.is_set():
            expired = await expire_leases()
            if expired:
                log.info("took back %d expired leases", expired)
            if ticks % 60 == 0:
                await expire_coins()
            ticks += 1
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), lease_sweep_s)
    finally:
        await notifier.stop()
        await pool.close()


def main(database_url: str) -> int:
    settings = Settings.from_env()
    try:
        container = build(
            settings,
            database_url,
            listen_url=os.environ.get("VIDEOCOPIES_LISTEN_URL"),
            direct=os.environ.get("VIDEOCOPIES_DATABASE_DIRECT") == "1",
        )
    except migrate.SchemaError as refused:
        print(f"videocopies core: {refused}", file=sys.stderr)
        return 2

    async def serve() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await run(container, stop)

    uvloop.run(serve())
    return 0
