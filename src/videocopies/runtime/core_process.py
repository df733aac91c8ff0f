"""Everything one core process runs over its container (roles/containers.py's
PostgresService, whose gateways give the adapters): pools, LISTEN, node identities, parked
claims, the inbox processors, the loops of `core_loops`, and the HTTP app over them, started and
stopped in order."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import AsyncIterator
from typing import Any, cast

import psycopg
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from videocopies.adapters.http.api import JobApiServices, Relocation, create_app
from videocopies.adapters.http.control_api import ControlApiServices
from videocopies.adapters.http.edge_api import EdgeApiServices, OutboxNews
from videocopies.adapters.http.metrics import CoreMetrics
from videocopies.adapters.postgres import migrate
from videocopies.adapters.postgres.figures import active_leases, read_figures
from videocopies.adapters.postgres.nodes import CHANNEL as NODES_CHANNEL
from videocopies.application import use_cases as uc
from videocopies.application.bot.inbox import InboxProcessor
from videocopies.application.claims import ClaimWaiters
from videocopies.application.duties import HoldDuty
from videocopies.application.lapsing import LapseAlarm, keep_lapsing
from videocopies.application.nodes import NodeAuthenticator
from videocopies.application.objects import ObjectLifecycle
from videocopies.application.ports import ListedStore, ObjectStore
from videocopies.application.retention import PruneTables, keep_pruning
from videocopies.domain.retention import PRUNE_TABLES
from videocopies.runtime import core_loops
from videocopies.runtime.lifecycle import Background, Server, server

log = logging.getLogger("videocopies.core")
INBOX_CHANNEL = "videocopies_inbox"
HAND_ON_S = 2.0  # how long a stopping core tries to hand each duty on


class Core:
    """One core process. `payment_bot`: the aiogram Bot behind the payment provider, scheduled
    for reconciliation and closed on stop (None: no provider, nothing scheduled);
    `relocation_hosts`: the https hosts an operator may send the nodes to (loopback always);
    `objects_store`: the store the object lifecycle deletes from (default: `store`, when it
    can list its keys; none: no lifecycle)."""

    def __init__(
        self, container: Any, store: ObjectStore | None = None, schema: migrate.SchemaStatus | None = None,
        lease_sweep_s: float = 10.0, claim_concurrency: int = 2, inbox_workers: int = 4, payment_bot: Any = None,
        outbox_max_attempts: int = 8, relocation_hosts: frozenset[str] = frozenset(),
        objects_store: ListedStore | None = None,
    ) -> None:
        self.container, self.schema, self._lease_sweep_s = container, schema, lease_sweep_s
        self._payment_bot, self._inbox_workers = payment_bot, inbox_workers
        gateways, cases, settings = container.gateways, container.use_cases, container.settings()
        self.pool, self.lease_pool, self.notifier = gateways.pool(), gateways.lease_pool(), gateways.notifier()
        self.clock = gateways.clock()
        self.registry = gateways.node_registry()
        self.authenticator = NodeAuthenticator(self.registry, self.clock)
        self.notifier.on(NODES_CHANNEL, self.authenticator.nodes_changed)
        self.peek = gateways.queue_peek()
        self.waiters = ClaimWaiters(
            cases.claim_job(), self.notifier, safety_poll_s=float(gateways.config.safety_poll_s() or 10.0),
            concurrency=claim_concurrency, peek=self.peek.claimable,
        )
        self.object_rows = gateways.object_rows()
        listed = cast(ListedStore, store) if hasattr(store, "keys") else None  # S3 and directories list their keys
        self._objects_store = objects_store or listed
        self.metrics = CoreMetrics(
            lambda: read_figures(self.pool), objects=self.object_rows.figures,
            store_disk=getattr(self._objects_store, "disk_usage", None),
        )
        self.outbox = gateways.outbox_queue()
        self.outbox_news = OutboxNews(self.outbox.anything)
        self.inbox_news = asyncio.Event()
        self.notifier.on(INBOX_CHANNEL, self.inbox_news.set)
        self.inbox_processor = InboxProcessor(
            gateways.inbox(), container.bot.conversation(), self.clock, replies_queued=self.outbox_news.queued
        )
        give_up_messages = uc.GiveUpMessages(self.outbox, cases.give_up_delivery())
        self.edge = EdgeApiServices(
            inbox=gateways.inbox(), inbox_added=self._inbox_added, outbox=self.outbox, news=self.outbox_news,
            languages=gateways.bot_users().languages, record_delivery=cases.record_delivery(),
            give_up_delivery=cases.give_up_delivery(), store=store, clock=self.clock, metrics=self.metrics,
            packages=settings.packages,
            hold_duty=HoldDuty(gateways.duty_leases(), self.clock, settings.duty_ttl),
            give_up_messages=give_up_messages,
            stop_serving=uc.StopServingUser(
                gateways.bot_users(), self.outbox, cases.cancel_order(), give_up_messages, self.clock
            ),
            max_attempts=outbox_max_attempts, keep_unreadable=gateways.inbox().keep_unreadable,
        )
        self.control = ControlApiServices(
            grant_coins=cases.grant_coins(), refund_payment=cases.refund_payment(),
            reconcile_payments=cases.reconcile_payments(), rules=settings.grants,
            queued=self.outbox_news.queued, payment_doubts=cases.payment_doubts(),
        )
        self.services = JobApiServices(
            authenticator=self.authenticator, waiters=self.waiters,
            renew_lease=cases.renew_lease(), checkpoint_copy=cases.checkpoint_copy(), give_up_copy=cases.give_up_copy(),
            complete_job=cases.complete_job(), complete_then_claim=cases.complete_then_claim(),
            fail_job=cases.fail_job(),
            acknowledge_cancel=cases.acknowledge_cancel(), inspect_held_job=cases.inspect_held_job(),
            report_progress=cases.report_progress(),
            store=store, info=self.info, queued=self.outbox_news.queued, metrics=self.metrics,
            relocation=Relocation(moved=self._moved, allowed_hosts=relocation_hosts),
        )
        self._loops = Background()
        self._duty_token = secrets.token_hex(16)  # one per process: a restarted core asks anew
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
        for loop in self._loops_to_run():
            self._loops.start(loop)

    def _loops_to_run(self) -> list[Any]:
        cases, settings, clock = self.container.use_cases, self.container.settings(), self.clock
        duties, token = self.container.gateways.duty_leases(), self._duty_token
        loops: list[Any] = [lambda stop: core_loops.sweep(
            cases.expire_leases(), cases.expire_coins(), stop, self._lease_sweep_s,
            settings.expiry_sweep_every.total_seconds(), self.peek.lapsed, self.metrics.lease_expiries.inc,
        )]
        if self._objects_store is not None:
            every = settings.objects_sweep_every.total_seconds()
            lifecycle = ObjectLifecycle(self.object_rows, self._objects_store, clock, settings.object_lifetimes)
            hold = HoldDuty(duties, clock, core_loops.duty_ttl(every, settings.duty_ttl))
            swept = self.metrics.objects_swept
            loops.append(lambda stop: core_loops.keep_sweeping(lifecycle, hold, clock, stop, every, swept, token))
        alarm, longest = LapseAlarm(), min(30.0, settings.quote_ttl.total_seconds())
        self.outbox.lapsing_noticed = alarm.noticed
        loops.append(lambda stop: keep_lapsing(
            self.outbox.lapse_buttons, self.outbox.next_lapse, clock, stop, longest_s=longest, alarm=alarm,
            queued=self.outbox_news.queued, counted=self.metrics.buttons_lapsed.inc,
        ))
        loops.append(lambda stop: self.inbox_processor.run(
            stop, self._inbox_wait, self._inbox_workers, safety_poll_s=10.0, peek=self.peek.inbox_waiting
        ))
        if self._payment_bot is not None:  # one core at a time, by duty
            every = settings.reconcile_every.total_seconds()
            held = core_loops.holding(
                HoldDuty(duties, clock, core_loops.duty_ttl(every, settings.duty_ttl)), core_loops.RECONCILE_DUTY,
                token, clock,
            )
            loops.append(lambda stop: core_loops.reconcile_payments(
                cases.reconcile_payments(), stop, every, self.outbox_news.queued, held
            ))
        if (prune_every := settings.prune_every) is not None:  # one core at a time, by duty
            rows = self.container.gateways.transient_rows()
            prune = PruneTables(rows, clock, settings.retention, settings.prune_batch)
            hold_pruning = HoldDuty(duties, clock, settings.duty_ttl)
            loops.append(lambda stop: keep_pruning(
                prune, hold_pruning, clock, core_loops.holder(), token, prune_every, stop
            ))
        return loops

    async def _hand_duties_on(self) -> None:
        """A core that stops releases the duties it holds: another core takes them at its next
        pass instead of waiting out the lease. All at once and for HAND_ON_S at most: with the
        database away, each would wait for a connection as long as a request does (10 s), and
        the stop would take that long three times over for what the leases' expiry does anyway."""
        release = HoldDuty(self.container.gateways.duty_leases(), self.clock, self.container.settings().duty_ttl)

        async def hand_on(duty: str) -> None:
            try:
                if await asyncio.wait_for(release.release(duty, self._duty_token), HAND_ON_S):
                    log.info("handed the %s duty on", duty)
            except Exception as error:  # noqa: BLE001 - the database may be away: the lease runs out instead
                log.warning("could not hand the %s duty on: %r", duty, error)

        await asyncio.gather(*(hand_on(duty) for duty in (core_loops.OBJECTS_DUTY, core_loops.RECONCILE_DUTY,
                                                          PRUNE_TABLES)))

    def release_claims(self) -> None:
        """Shutting down: parked claims are answered empty now, not after their wait."""
        self._loops.stopping.set()
        self.outbox_news.close()
        asyncio.ensure_future(self.waiters.stop())

    async def stop(self) -> None:
        self._loops.stopping.set()
        await self.waiters.stop()
        await self._loops.stop()
        await self._hand_duties_on()
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
        return {
            "schema_revision": self.schema.revision if self.schema else None,
            "code_level": migrate.CODE_LEVEL,
            "accepts_code_levels": [self.schema.min_code_level, self.schema.max_code_level] if self.schema else None,
            "active_leases": await active_leases(self.pool),
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


def core_server(core: Core, host: str, port: int, tls: tuple[str, str] | None = None) -> Server:
    """Core's uvicorn: parked claims are answered at the first signal."""
    return server(
        core.app, host, port, tls, on_exit=core.release_claims,
        timeout_graceful_shutdown=10, backlog=4096, timeout_keep_alive=75,
    )
