"""Failover under load. A primary with a synchronous standby; core runs as its own process on
one multi-host URL (target_session_attrs=read-write); customers confirm orders through the
application layer and a worker claims jobs through core's API. The primary is killed
(SIGKILL, postmaster and backends), the standby promoted: core and the customers' pools find
it by themselves, core hears NOTIFY again, and every grant, order and lease a client was told
about before the crash is on the new primary with its coins, and the ledger adds up."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import signal
import time
from collections.abc import Awaitable, Callable
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

import attrs
import httpx
import psycopg
from dependency_injector import providers

from videocopies.adapters.memory import InMemoryPaymentProvider
from videocopies.adapters.postgres import migrate
from videocopies.adapters.postgres.ledger_audit import audit_ledger
from videocopies.application import use_cases as uc
from videocopies.domain.coins import LotKind
from videocopies.domain.pricing import QuoteAlreadyUsed
from videocopies.domain.shared import LotId, OrderId, UserId
from videocopies.embedded.postgres import LocalPostgres
from videocopies.embedded.standby import LocalStandby, failover_url
from videocopies.roles.containers import PostgresService
from videocopies.runtime.launch import CoreProcess, issue_token
from videocopies.settings import Settings

from .harness import fetch_all

DB = "videocopies"
SECRET = "failover-secret" * 3
CUSTOMERS = 6
LOAD_BEFORE_KILL_S = 3.0
SAFETY_POLL_S = "30"  # core's fallback wake-up: far longer than NOTIFY may take after the failover
# A worker takes a few jobs at a time, as a real one does: the leases it holds at the crash
# (some dozens) are all renewed afterwards, each within a generous HTTP timeout.
CLAIM_LIMIT = 2
CLAIM_PAUSE_S = 0.1
T = TypeVar("T")


def crash(server: LocalPostgres) -> None:
    """What a dead machine looks like to its clients: the postmaster and every backend gone at once."""
    postmaster = server.pid
    assert postmaster is not None
    children = [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit() and _parent(p) == postmaster]
    for pid in (postmaster, *children):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _parent(proc: Path) -> int | None:
    try:
        return int((proc / "stat").read_text().rpartition(")")[2].split()[1])
    except (OSError, ValueError, IndexError):
        return None


@attrs.define
class Told:
    """What the clients were told was done, with when (monotonic seconds)."""

    lots: dict[LotId, UserId] = attrs.Factory(dict)
    orders: dict[OrderId, tuple[UserId, int, float]] = attrs.Factory(dict)
    claims: dict[str, tuple[str, float]] = attrs.Factory(dict)  # job id -> owner token, when
    in_doubt_found_committed: int = 0
    database_errors: int = 0
    unavailable: int = 0  # 503s from core

    def orders_before(self, moment: float) -> dict[OrderId, tuple[UserId, int, float]]:
        return {o: told for o, told in self.orders.items() if told[2] < moment}


async def retrying(told: Told, call: Callable[[Any], Awaitable[T]], command: Any) -> T:
    while True:
        try:
            return await call(command)
        except psycopg.OperationalError:
            told.database_errors += 1
            await asyncio.sleep(0.1)


async def customer(cases: Any, told: Told, users: itertools.count, stop: asyncio.Event) -> None:
    while not stop.is_set():
        user = UserId(next(users))
        lot = LotId(f"failover-{user}")
        grant = uc.GrantCoinsCommand(user, LotKind.START, 50, timedelta(days=30), lot_id=lot)
        await retrying(told, cases.grant_coins(), grant)  # idempotent by its lot id
        told.lots[lot] = user
        ask = uc.QuoteOrderCommand(user, f"sources/{user}.mp4", 5 if user % 2 else 1)
        quote = await retrying(told, cases.quote_order(), ask)
        confirm = uc.ConfirmOrderCommand(user, quote.quote_id, quote.token)
        in_doubt = False
        while True:
            try:
                order_id = await cases.confirm_order()(confirm)
                break
            except psycopg.OperationalError:
                told.database_errors += 1
                in_doubt = True  # the commit may or may not have happened: ask again
                await asyncio.sleep(0.1)
            except QuoteAlreadyUsed:
                assert in_doubt, "a quote used before it was ever confirmed"
                told.in_doubt_found_committed += 1
                order_id = quote.quote_id
                break
        told.orders[order_id] = (user, quote.total, time.monotonic())


async def worker(core_url: str, token: str, told: Told, stop: asyncio.Event) -> None:
    async with httpx.AsyncClient(base_url=core_url, headers={"Authorization": f"Bearer {token}"}) as http:
        while not stop.is_set():
            try:
                answer = await http.post("/v1/jobs/claim", json={"wait_s": 1.0, "limit": CLAIM_LIMIT}, timeout=10)
            except httpx.TransportError:
                await asyncio.sleep(0.1)
                continue
            if answer.status_code == 503:
                told.unavailable += 1
                await asyncio.sleep(0.1)
                continue
            assert answer.status_code == 200, answer.text
            for job in answer.json()["jobs"]:
                told.claims[job["job_id"]] = (job["token"], time.monotonic())
            await asyncio.sleep(CLAIM_PAUSE_S)


async def renew(http: httpx.AsyncClient, told: Told, job_id: str, token: str) -> None:
    while (answer := await http.post(f"/v1/jobs/{job_id}/renew", json={"token": token}, timeout=30)).status_code == 503:
        told.unavailable += 1
        await asyncio.sleep(0.1)
    assert answer.status_code == 200, answer.text


async def parked_claim_wakes(core_url: str, token: str, cases: Any, users: itertools.count) -> float:
    """Seconds from a confirmation to a parked claim getting its job: only NOTIFY, heard on
    core's re-made LISTEN connection, can make this shorter than the safety poll."""
    async with httpx.AsyncClient(base_url=core_url, headers={"Authorization": f"Bearer {token}"}) as http:
        while (left := await http.post("/v1/jobs/claim", json={"limit": 10}, timeout=10)).status_code != 200 or (
            left.json()["jobs"]
        ):
            pass  # take what the load left
        parked = asyncio.ensure_future(http.post("/v1/jobs/claim", json={"wait_s": 20, "limit": 1}, timeout=30))
        while (info := await http.get("/_info")).status_code != 200 or info.json()["parked_claims"] < 1:
            await asyncio.sleep(0.02)
        user = UserId(next(users))
        await cases.grant_coins()(uc.GrantCoinsCommand(user, LotKind.START, 50, None))
        quote = await cases.quote_order()(uc.QuoteOrderCommand(user, "sources/quiet.mp4", 1))
        began = time.monotonic()
        order_id = await cases.confirm_order()(uc.ConfirmOrderCommand(user, quote.quote_id, quote.token))
        answer = await parked
        assert answer.status_code == 200, answer.text
        (job,) = answer.json()["jobs"]
        assert job["order_id"] == order_id
        return time.monotonic() - began


async def under_load(url: str, core: CoreProcess, token: str, primary: LocalPostgres, standby: LocalStandby) -> dict:
    service = PostgresService(settings=Settings(quote_secret=SECRET.encode()))
    service.gateways.config.from_dict({"database_url": url, "pool_size": 4, "safety_poll_s": 1.0})
    service.gateways.payment_provider.override(providers.Object(InMemoryPaymentProvider()))
    pool, notifier = service.gateways.pool(), service.gateways.notifier()
    await pool.open(wait=True, timeout=30)
    await notifier.start()
    told, stop, users = Told(), asyncio.Event(), itertools.count(100_000)
    load = [asyncio.create_task(customer(service.use_cases, told, users, stop)) for _ in range(CUSTOMERS)]
    load.append(asyncio.create_task(worker(core.url, token, told, stop)))
    try:
        await asyncio.sleep(LOAD_BEFORE_KILL_S)
        killed = time.monotonic()
        crash(primary)
        promote_s = await asyncio.to_thread(standby.promote)
        promoted = time.monotonic()
        while not (
            len({user for user, _, at in told.orders.values() if at > promoted}) >= CUSTOMERS
            and any(at > promoted for _, at in told.claims.values())
        ):
            assert time.monotonic() - killed < 30, f"no recovery after 30 s: {told}"
            assert not any(task.done() for task in load), [task.exception() for task in load if task.done()]
            await asyncio.sleep(0.05)
        await asyncio.sleep(1.0)  # a little more load on the new primary
        stop.set()
        await asyncio.gather(*load)
        async with httpx.AsyncClient(base_url=core.url, headers={"Authorization": f"Bearer {token}"}) as http:
            held_before = [(job, tok) for job, (tok, at) in told.claims.items() if at < killed]
            await asyncio.gather(*(renew(http, told, job, tok) for job, tok in held_before))
        notify_s = await parked_claim_wakes(core.url, token, service.use_cases, users)
    finally:
        stop.set()
        for task in load:
            task.cancel()
        await asyncio.gather(*load, return_exceptions=True)
        await notifier.stop()
        await pool.close()
    first_order = min(at for _, _, at in told.orders.values() if at > promoted)
    first_claim = min(at for _, at in told.claims.values() if at > promoted)
    return {
        "told": told, "killed": killed, "leases_renewed": len(held_before),
        "figures": {
            "orders_acknowledged_before_kill": len(told.orders_before(killed)),
            "orders_acknowledged_in_all": len(told.orders),
            "in_doubt_confirmations_found_committed": told.in_doubt_found_committed,
            "leases_held_before_kill_renewed_after": len(held_before),
            "promote_s": round(promote_s, 3),
            "kill_to_first_order_s": round(first_order - killed, 3),
            "kill_to_first_claim_through_core_s": round(first_claim - killed, 3),
            "confirm_to_parked_claim_after_failover_s": round(notify_s, 3),
            "database_errors_seen_by_customers": told.database_errors,
            "503s_from_core": told.unavailable,
        },
    }


def test_no_acknowledged_order_or_coin_is_lost_when_the_primary_dies() -> None:
    began = time.monotonic()
    with LocalPostgres() as primary:
        migrate.init(primary.url(DB))
        with LocalStandby(primary, name="standby_1") as standby:
            assert standby.replication_state() == ("streaming", "sync")
            url = failover_url([primary, standby], DB)
            token = issue_token(url, "failover-worker")
            core = CoreProcess(url, quote_secret=SECRET, VIDEOCOPIES_SAFETY_POLL_S=SAFETY_POLL_S)
            with core:
                run = asyncio.run(under_load(url, core, token, primary, standby))
                assert httpx.get(f"{core.url}/_info", timeout=5).status_code == 200
                assert core.process is not None and core.process.poll() is None, "core died in the failover"
            assert primary.pid is None
            new_primary = standby.url(DB)
            told: Told = run["told"]
            lots = dict(fetch_all(new_primary, "SELECT lot_id, user_id FROM coin_lots WHERE amount = 50"))
            missing_lots = {lot for lot, user in told.lots.items() if lots.get(lot) != user}
            assert not missing_lots, f"{len(missing_lots)} acknowledged grants lost"
            stored = {
                order: (user, reserved, jobs)
                for order, user, reserved, jobs in fetch_all(
                    new_primary,
                    "SELECT o.order_id, o.user_id, r.amount, count(j.job_id) FROM orders o "
                    "JOIN coin_reservations r USING (order_id) LEFT JOIN jobs j USING (order_id) "
                    "WHERE o.state <> 'quoted' GROUP BY o.order_id, o.user_id, r.amount",
                )
            }
            lost = {o for o, (user, total, _) in told.orders.items() if stored.get(o) != (user, total, 1)}
            assert not lost, f"{len(lost)} acknowledged orders lost or changed, e.g. {sorted(lost)[:3]}"
            assert run["figures"]["orders_acknowledged_before_kill"] >= 10, run["figures"]
            audit = audit_ledger(new_primary)
            assert audit.sound, [finding.describe() for finding in audit.findings]
    figures = {**run["figures"], "orders_on_new_primary": len(stored), "test_s": round(time.monotonic() - began, 1)}
    print("failover:", json.dumps(figures))
    assert figures["kill_to_first_claim_through_core_s"] < 15, figures
    assert figures["confirm_to_parked_claim_after_failover_s"] < 5, figures
