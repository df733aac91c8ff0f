"""The core role's composition root: checks the schema, serves the Job API, runs the sweeps.

Configuration comes from the environment (or the command line): VIDEOCOPIES_DATABASE_URL
(may point at PgBouncer), VIDEOCOPIES_LISTEN_URL (straight to PostgreSQL, for LISTEN),
VIDEOCOPIES_DATABASE_DIRECT=1 (no pooler in between), VIDEOCOPIES_CORE_HOST / _PORT, and
the storage the Job API signs URLs for: VIDEOCOPIES_S3_* (or none, when workers reach a
shared VIDEOCOPIES_STORE_DIR themselves). The media limits the bot refuses videos by follow
the Bot API server in use (see `telegram_limits`); VIDEOCOPIES_OUTBOX_MAX_ATTEMPTS (8) bounds
the claims of one outbox message before it is given up. VIDEOCOPIES_TLS_CERT and
VIDEOCOPIES_TLS_KEY: serve https with them; VIDEOCOPIES_RELOCATION_HOSTS: the https hosts
`/v1/admin/moved` may send the nodes to (none: only loopback).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import signal
import socket
import sys
from collections.abc import AsyncIterator, Callable
from typing import Any

import attrs
import psycopg
import uvicorn
import uvloop
from dependency_injector import providers
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from videocopies.adapters.http.api import JobApiServices, Relocation, create_app
from videocopies.adapters.http.control_api import ControlApiServices
from videocopies.adapters.http.core_urls import hosts_from
from videocopies.adapters.http.edge_api import EdgeApiServices, OutboxNews
from videocopies.adapters.http.metrics import CoreMetrics
from videocopies.adapters.postgres import migrate
from videocopies.adapters.postgres.duties import PostgresDutyLeases
from videocopies.adapters.postgres.figures import active_leases, read_figures
from videocopies.adapters.postgres.nodes import CHANNEL as NODES_CHANNEL
from videocopies.adapters.postgres.nodes import PostgresNodeRegistry
from videocopies.adapters.postgres.objects import PostgresObjectRows
from videocopies.adapters.postgres.outbox import PostgresOutboxQueue
from videocopies.adapters.postgres.peek import PostgresQueuePeek
from videocopies.adapters.postgres.retention import PostgresTransientRows
from videocopies.application import use_cases as uc
from videocopies.application.bot.inbox import InboxProcessor
from videocopies.application.claims import ClaimWaiters
from videocopies.application.duties import HoldDuty
from videocopies.application.nodes import NodeAuthenticator
from videocopies.application.objects import ListedStore, ObjectLifecycle
from videocopies.application.ports import ObjectStore
from videocopies.application.retention import PruneTables, keep_pruning
from videocopies.roles.containers import PostgresService
from videocopies.roles.object_lifecycle import duty_ttl, keep_sweeping
from videocopies.runtime import heap
from videocopies.settings import Settings
from videocopies.telegram_limits import MediaLimits

log = logging.getLogger("videocopies.core")
INBOX_CHANNEL = "videocopies_inbox"


def build(
    settings: Settings,
    database_url: str,
    pool_size: int = 10,
    listen_url: str | None = None,
    direct: bool = False,
    lease_pool_size: int | None = None,
    safety_poll_s: float = 1.0,
    wait_s: float = 30.0,
) -> PostgresService:
    """Refuses a missing, empty or incompatible database before building anything.

    `database_url` may point at PgBouncer; `listen_url` must reach PostgreSQL itself (LISTEN
    does not survive transaction pooling); `direct` lets psycopg prepare statements, which
    only a connection straight to PostgreSQL can carry."""
    migrate.check(database_url)
    container = PostgresService(settings=settings)
    container.gateways.config.from_dict(
        {
            "database_url": database_url, "pool_size": pool_size, "listen_url": listen_url, "direct": direct,
            "lease_pool_size": lease_pool_size, "safety_poll_s": safety_poll_s, "wait_s": wait_s,
        }
    )
    return container


async def sweep(
    container: PostgresService, stop: asyncio.Event, lease_sweep_s: float = 1.0, peek: PostgresQueuePeek | None = None,
    leases_expired: Callable[[int], None] = lambda count: None,
) -> None:
    """Leases that ran out go back to the queue; expired coin lots close (every
    `expiry_sweep_every` of the settings). With `peek`, the sweep glances first and opens a
    transaction only when some lease has run out."""
    expire_leases = container.use_cases.expire_leases()
    expire_coins = container.use_cases.expire_coins()
    expiry_every = max(1, round(container.settings().expiry_sweep_every.total_seconds() / lease_sweep_s))
    ticks = 0
    while not stop.is_set():
        try:
            if (peek is None or await peek.lapsed()) and (expired := await expire_leases()):
                log.info("took back %d expired leases", expired)
                leases_expired(expired)
            if ticks % expiry_every == 0 and (coins := await expire_coins()):
                log.info("expired %d coins", coins)
        except Exception as error:  # noqa: BLE001 - a database restart must not stop the sweeps
            log.warning("sweep failed: %r", error)
        ticks += 1
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), lease_sweep_s)


async def reconcile_payments(container: PostgresService, stop: asyncio.Event, queued: Any = None) -> None:
    """Reconciliation with the payment provider, every `reconcile_every` of the settings:
    payments whose notification was lost are credited, refunds left pending finished."""
    reconcile = container.use_cases.reconcile_payments()
    every = container.settings().reconcile_every.total_seconds()
    while not stop.is_set():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), every)
        if stop.is_set():
            return
        try:
            result = await reconcile()
        except Exception as error:  # noqa: BLE001 - the provider or the database may be away
            log.warning("reconciliation failed: %r", error)
            continue
        if queued is not None:
            queued()
        if not result.report.clean:
            log.info("reconciliation: %s", "; ".join(result.lines()))


async def run(container: PostgresService, stop: asyncio.Event, lease_sweep_s: float = 1.0) -> None:
    """Core without its API: the sweeps alone (tests, and a core that serves no workers)."""
    pool = container.gateways.pool()
    await pool.open(wait=True, timeout=30)
    notifier = container.gateways.notifier()
    await notifier.start()
    try:
        await sweep(container, stop, lease_sweep_s)
    finally:
        await notifier.stop()
        await pool.close()


class Core:
    """Everything one core process runs: pools, LISTEN, node identities, parked claims,
    the sweeps, and the HTTP app over them."""

    def __init__(
        self,
        container: PostgresService,
        store: ObjectStore | None = None,
        schema: migrate.SchemaStatus | None = None,
        lease_sweep_s: float = 10.0,
        claim_concurrency: int = 2,
        inbox_workers: int = 4,
        payment_bot: Any = None,
        outbox_max_attempts: int = 8,
        relocation_hosts: frozenset[str] = frozenset(),
        objects_store: ListedStore | None = None,
    ) -> None:
        """`payment_bot`: the aiogram Bot behind the payment provider, scheduled for
        reconciliation and closed on stop (None: no provider, nothing scheduled);
        `relocation_hosts`: the https hosts an operator may send the nodes to (loopback always);
        `objects_store`: the store the object lifecycle deletes from (default: `store`, when it
        can list its keys; none: no lifecycle)."""
        self.container, self.schema, self._lease_sweep_s = container, schema, lease_sweep_s
        self._payment_bot = payment_bot
        gateways = container.gateways
        self.pool, self.lease_pool, self.notifier = gateways.pool(), gateways.lease_pool(), gateways.notifier()
        self.registry = PostgresNodeRegistry(self.pool)
        self.authenticator = NodeAuthenticator(self.registry, gateways.clock())
        self.notifier.on(NODES_CHANNEL, self.authenticator.nodes_changed)
        safety = float(gateways.config.safety_poll_s() or 10.0)
        self.peek = PostgresQueuePeek(self.pool)
        self.waiters = ClaimWaiters(
            container.use_cases.claim_job(), self.notifier, safety_poll_s=safety, concurrency=claim_concurrency,
            peek=self.peek.claimable,
        )
        cases = container.use_cases
        self.object_rows = PostgresObjectRows(self.pool)
        self._objects_store = objects_store or (store if hasattr(store, "keys") else None)
        self.metrics = CoreMetrics(
            lambda: read_figures(self.pool), objects=self.object_rows.figures,
            store_disk=getattr(self._objects_store, "disk_usage", None),
        )
        self.outbox = PostgresOutboxQueue(self.pool)
        self.outbox_news = OutboxNews(self.outbox.anything)
        self.inbox_news = asyncio.Event()
        self.notifier.on(INBOX_CHANNEL, self.inbox_news.set)
        self.inbox_processor = InboxProcessor(
            gateways.inbox(), container.bot.conversation(), gateways.clock(), replies_queued=self.outbox_news.queued
        )
        self._inbox_workers = inbox_workers
        give_up_messages = uc.GiveUpMessages(self.outbox, cases.give_up_delivery())
        self.edge = EdgeApiServices(
            inbox=gateways.inbox(), inbox_added=self._inbox_added, outbox=self.outbox, news=self.outbox_news,
            languages=gateways.bot_users().languages, record_delivery=cases.record_delivery(),
            give_up_delivery=cases.give_up_delivery(), store=store,
            clock=gateways.clock(), metrics=self.metrics, packages=container.settings().packages,
            hold_duty=HoldDuty(PostgresDutyLeases(self.pool), gateways.clock(), container.settings().duty_ttl),
            give_up_messages=give_up_messages,
            stop_serving=uc.StopServingUser(
                gateways.bot_users(), self.outbox, cases.cancel_order(), give_up_messages, gateways.clock()
            ),
            max_attempts=outbox_max_attempts, keep_unreadable=gateways.inbox().keep_unreadable,
        )
        self.control = ControlApiServices(
            grant_coins=cases.grant_coins(), refund_payment=cases.refund_payment(),
            reconcile_payments=cases.reconcile_payments(), rules=container.settings().grants,
            queued=self.outbox_news.queued, payment_doubts=cases.payment_doubts(),
        )
        self.services = JobApiServices(
            authenticator=self.authenticator, waiters=self.waiters,
            renew_lease=cases.renew_lease(), checkpoint_copy=cases.checkpoint_copy(),
            give_up_copy=cases.give_up_copy(),
            complete_job=cases.complete_job(), fail_job=cases.fail_job(),
            acknowledge_cancel=cases.acknowledge_cancel(), inspect_held_job=cases.inspect_held_job(),
            store=store, info=self.info, queued=self.outbox_news.queued, metrics=self.metrics,
            relocation=Relocation(moved=self._moved, allowed_hosts=relocation_hosts),
        )
        self._stop = asyncio.Event()
        self._sweeps: asyncio.Task[None] | None = None
        self._tidy: asyncio.Task[None] | None = None
        self._store = store
        self._inbox: asyncio.Task[None] | None = None
        self._payments: asyncio.Task[None] | None = None
        self._prune: asyncio.Task[None] | None = None
        self.app: FastAPI = create_app(self.services, self.edge, self.control)
        self.app.router.lifespan_context = self._lifespan
        self.app.add_exception_handler(psycopg.OperationalError, database_unavailable)

    async def start(self) -> None:
        await self.pool.open(wait=True, timeout=30)
        if self.lease_pool is not self.pool:
            await self.lease_pool.open(wait=True, timeout=30)
        await self.notifier.start()
        await self.authenticator.start()
        await self.waiters.start()
        self._sweeps = asyncio.create_task(sweep(
            self.container, self._stop, self._lease_sweep_s, self.peek, self.metrics.lease_expiries.inc
        ))
        if self._objects_store is not None:
            settings, clock = self.container.settings(), self.container.gateways.clock()
            every = settings.objects_sweep_every.total_seconds()
            lifecycle = ObjectLifecycle(self.object_rows, self._objects_store, clock, settings.object_lifetimes)
            hold = HoldDuty(PostgresDutyLeases(self.pool), clock, duty_ttl(every, settings.duty_ttl))
            self._tidy = asyncio.create_task(
                keep_sweeping(lifecycle, hold, clock, self._stop, every, self.metrics.objects_swept)
            )
        self._inbox = asyncio.create_task(
            self.inbox_processor.run(
                self._stop, self._inbox_wait, self._inbox_workers, safety_poll_s=10.0, peek=self.peek.inbox_waiting
            )
        )
        if self._payment_bot is not None:
            self._payments = asyncio.create_task(
                reconcile_payments(self.container, self._stop, self.outbox_news.queued)
            )
        if (pruning := self.container.settings()).prune_every is not None:  # one core at a time, by duty
            clock = self.container.gateways.clock()
            self._prune = asyncio.create_task(keep_pruning(
                PruneTables(PostgresTransientRows(self.pool), clock, pruning.retention, pruning.prune_batch),
                HoldDuty(PostgresDutyLeases(self.pool), clock, pruning.duty_ttl), clock,
                f"core@{socket.gethostname()}:{os.getpid()}", secrets.token_hex(16), pruning.prune_every, self._stop,
            ))

    def release_claims(self) -> None:
        """Shutting down: parked claims are answered empty now, not after their wait."""
        self._stop.set()
        self.outbox_news.close()
        asyncio.ensure_future(self.waiters.stop())

    async def stop(self) -> None:
        self._stop.set()
        await self.waiters.stop()
        for task in (self._sweeps, self._inbox, self._payments, self._tidy, self._prune):
            if task is not None:
                await task
        if self._payment_bot is not None:
            await self._payment_bot.session.close()
        await self.authenticator.stop()
        await self.notifier.stop()
        if self.lease_pool is not self.pool:
            await self.lease_pool.close()
        await self.pool.close()

    def _moved(self) -> None:
        """Nodes waiting on a long poll here are answered now, and move with their next call."""
        asyncio.ensure_future(self.waiters.stop())
        self.outbox_news.queued()

    def _inbox_added(self) -> None:
        """Events were stored: wake this core's processors, and by NOTIFY the other cores'."""
        self.inbox_news.set()
        self.notifier.announce(INBOX_CHANNEL)

    async def _inbox_wait(self, timeout: float) -> bool:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.inbox_news.wait(), timeout)
        news = self.inbox_news.is_set()
        self.inbox_news.clear()
        return news

    async def info(self) -> dict[str, Any]:
        leases = await active_leases(self.pool)
        return {
            "schema_revision": self.schema.revision if self.schema else None,
            "code_level": migrate.CODE_LEVEL,
            "accepts_code_levels": [self.schema.min_code_level, self.schema.max_code_level] if self.schema else None,
            "active_leases": leases,
            "edges": self.metrics.edges,  # each edge node's own counters, as it last reported them
        }

    @contextlib.asynccontextmanager
    async def _lifespan(self, _app: FastAPI) -> AsyncIterator[None]:
        await self.start()
        try:
            yield
        finally:
            await self.stop()


async def database_unavailable(_request: Request, error: Exception) -> JSONResponse:
    """The database went away (a restart, a failover) or no connection came in time: nodes
    send the same request again (same receipt id) until the pool has found the primary."""
    log.warning("database unavailable: %s", error)
    body = {"error": "database_unavailable", "detail": "the database is unavailable; try again"}
    return JSONResponse(body, status_code=503, headers={"Retry-After": "1"})


class _Server(uvicorn.Server):
    """Answers parked claims at the first signal, so a graceful stop does not wait out
    every long poll."""

    def __init__(self, config: uvicorn.Config, core: Core) -> None:
        super().__init__(config)
        self._core = core

    def handle_exit(self, sig: int, frame: Any) -> None:
        self._core.release_claims()
        super().handle_exit(sig, frame)
        if sig == signal.SIGTERM:
            # uvicorn raises a captured signal again after shutting down; SIGTERM is how an
            # operator stops core, and a clean stop exits 0.
            self._captured_signals.remove(sig)


def server(core: Core, host: str, port: int, tls: tuple[str, str] | None = None) -> uvicorn.Server:
    """`tls`: the certificate (chain) and key files core serves https with; None: plain http."""
    certfile, keyfile = tls or (None, None)
    config = uvicorn.Config(
        core.app, host=host, port=port, lifespan="on", log_level="warning", access_log=False,
        timeout_graceful_shutdown=10, backlog=4096, timeout_keep_alive=75, loop="none",
        ssl_certfile=certfile, ssl_keyfile=keyfile,
    )
    return _Server(config, core)


def tls_from_env(env: dict[str, str]) -> tuple[str, str] | None:
    cert, key = env.get("VIDEOCOPIES_TLS_CERT"), env.get("VIDEOCOPIES_TLS_KEY")
    if bool(cert) != bool(key):
        raise SystemExit("videocopies core: set both VIDEOCOPIES_TLS_CERT and VIDEOCOPIES_TLS_KEY, or neither")
    return (cert, key) if cert and key else None


def object_store_from_env(env: dict[str, str]) -> ObjectStore | None:
    if endpoint := env.get("VIDEOCOPIES_S3_ENDPOINT"):
        from videocopies.adapters.objectstore.s3 import S3ObjectStore

        return S3ObjectStore(
            env["VIDEOCOPIES_S3_BUCKET"], endpoint, env["VIDEOCOPIES_S3_ACCESS_KEY"], env["VIDEOCOPIES_S3_SECRET_KEY"]
        )
    return None


def lifecycle_store_from_env(env: dict[str, str]) -> ListedStore | None:
    """The shared directory store (VIDEOCOPIES_STORE_DIR, as all-in-one's workers and edge use)
    for the object lifecycle alone: the Job API still signs no URLs for it."""
    if directory := env.get("VIDEOCOPIES_STORE_DIR"):
        from pathlib import Path

        from videocopies.adapters.objectstore.filesystem import FilesystemObjectStore

        return FilesystemObjectStore(Path(directory))
    return None


def main(database_url: str, host: str | None = None, port: int | None = None) -> int:
    env = dict(os.environ)
    settings = Settings.from_env(env)
    try:
        schema = migrate.check(database_url)
        container = build(
            settings,
            database_url,
            pool_size=int(env.get("VIDEOCOPIES_POOL_SIZE", "4")),
            listen_url=env.get("VIDEOCOPIES_LISTEN_URL"),
            direct=env.get("VIDEOCOPIES_DATABASE_DIRECT") == "1",
            lease_pool_size=int(env.get("VIDEOCOPIES_LEASE_POOL_SIZE", "4")),
            safety_poll_s=float(env.get("VIDEOCOPIES_SAFETY_POLL_S", "10")),
            wait_s=float(env.get("VIDEOCOPIES_DB_WAIT_S", "10")),
        )
    except migrate.SchemaError as refused:
        print(f"videocopies core: {refused}", file=sys.stderr)
        return 2
    # Lapsed leases are found within a third of their length (and at least every 10 s).
    sweep_s = min(10.0, settings.lease_ttl.total_seconds() / 3)
    from videocopies.roles.payments import attach_provider

    bot = attach_provider(container, env)
    limits = MediaLimits.from_env(env)
    container.bot.bot_settings.override(providers.Object(attrs.evolve(
        container.bot.bot_settings(), max_video_bytes=limits.max_bytes, max_video_seconds=limits.max_seconds,
        max_pixel_rate=limits.max_pixel_rate,
    )))
    store = object_store_from_env(env)
    core = Core(container, store, schema, lease_sweep_s=sweep_s, payment_bot=bot,
                objects_store=store or lifecycle_store_from_env(env),  # type: ignore[arg-type]
                outbox_max_attempts=int(env.get("VIDEOCOPIES_OUTBOX_MAX_ATTEMPTS", "8")),
                relocation_hosts=hosts_from(env.get("VIDEOCOPIES_RELOCATION_HOSTS", "")))
    host = host or env.get("VIDEOCOPIES_CORE_HOST", "127.0.0.1")
    port = port or int(env.get("VIDEOCOPIES_CORE_PORT", "8700"))
    tls = tls_from_env(env)
    log.info("core serving on %s:%d%s", host, port, " (TLS)" if tls else "")
    heap.settle()
    uvloop.run(server(core, host, port, tls).serve())
    return 0

