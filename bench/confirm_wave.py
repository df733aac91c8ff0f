"""Benchmark: a wave of 1,000 order confirmations through the application layer.

Prints one JSON line: the wave from 1,000 distinct users and from 50 users (50 concurrent
clients each), and the same statements issued bare through psycopg in the same run
(`raw_sql_seconds`, `ratio_to_raw` = raw seconds / application seconds); the headline's
waves alternate `--rounds` times (3) and each figure is the median of its rounds. Both run on one
server, durable unless VIDEOCOPIES_BENCH_DURABLE=0: every confirmation's COMMIT and every
replayed COMMIT waits for its WAL flush. `--setting` evaluates a server setting such as
commit_delay beside the headline, which is measured with none.

A wave arrives at a running core: its pool's connections have served before, so each server
backend has already compiled the two database functions and planned their statements (with
PgBouncer in front, the server's connections outlive any client's). Each process therefore
confirms `--warm` orders of other users on every connection of its pool before the common start,
and the raw replay replays theirs the same way; then each process settles its heap
(`runtime.heap.settle`, as core does before it serves). `cold_seconds` is one wave of each kind on fresh
connections, as the headline was measured before.

    uv run python bench/confirm_wave.py [--orders 1000] [--clients 50] [--pool 10] [--setting commit_delay=1000]
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import contextvars
import multiprocessing
import os
import statistics
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import uvloop
from _support import emit, fresh_database, p95, server, service
from dependency_injector import providers
from psycopg_pool import AsyncConnectionPool

from videocopies.adapters.memory import ManualClock, SequentialIds
from videocopies.adapters.postgres.queries import sql
from videocopies.adapters.postgres.unit_of_work import PostgresUnitOfWork
from videocopies.application import use_cases as uc
from videocopies.domain.coins import LotKind
from videocopies.domain.shared import UserId
from videocopies.runtime import heap

LITERAL = os.environ.get("VIDEOCOPIES_BENCH_LITERAL") == "1"
_recording: contextvars.ContextVar[list[tuple[str, str, Any]] | None] = contextvars.ContextVar("rec", default=None)


class RecordingUnitOfWork(PostgresUnitOfWork):
    """Notes every statement a confirmation issues, so the raw run replays exactly those."""

    def _note(self, kind: str, query: str, params: Any) -> None:
        if (log := _recording.get()) is not None:
            log.append((kind, query, params))

    async def fetchone(self, query: str, params: dict[str, Any]) -> dict[str, Any] | None:
        self._note("read", query, params)
        return await super().fetchone(query, params)

    async def _send(self, cursor: Any, batch: bytes) -> None:
        self._note("batch", batch, None)
        await super()._send(cursor, batch)


async def prepare(
    url: str, users: int, per_user: int, clock: ManualClock, warm: int = 0
) -> tuple[list[tuple[UserId, str, str]], list[tuple[UserId, str, str]]]:
    """Quotes of `users` users, `per_user` each, and one each of `warm` other users."""
    container = service(url, pool_size=10, clock=clock)
    container.gateways.ids.override(providers.Object(SequentialIds(seed=7)))
    pool = container.gateways.pool()
    await pool.open(wait=True)
    grant, quote = container.use_cases.grant_coins(), container.use_cases.quote_order()
    quotes = []
    plan = [(user, per_user) for user in range(1, users + 1)] + [(10**6 + n, 1) for n in range(warm)]
    for user, count in plan:
        await grant(uc.GrantCoinsCommand(UserId(user), LotKind.START, 5 * 4 * count, timedelta(days=30)))
        for _ in range(count):
            q = await quote(uc.QuoteOrderCommand(UserId(user), f"sources/{user}.mp4", 5))
            quotes.append((q.user_id, q.quote_id, q.token))
    await pool.close()
    return quotes[:users * per_user], quotes[users * per_user:]


async def drive(calls: list[Any], clients: int) -> tuple[float, list[float]]:
    """Run the calls with `clients` concurrent callers; returns wall seconds and latencies."""
    pending = list(reversed(calls))
    latencies: list[float] = []

    async def client() -> None:
        while pending:
            call = pending.pop()
            began = time.perf_counter()
            await call()
            latencies.append(time.perf_counter() - began)

    began = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(clients)))
    return time.perf_counter() - began, latencies


async def app_wave(
    url: str,
    quotes: list[tuple[UserId, str, str]],
    clients: int,
    pool_size: int,
    clock: ManualClock,
    record: bool = False,
) -> tuple[float, list[float], list[Any]]:
    container = service(url, pool_size=pool_size, clock=clock)
    if record:
        gateways = container.gateways
        gateways.uow.override(providers.Factory(
            RecordingUnitOfWork, pool=gateways.pool, clock=gateways.clock, jobs_keep_seed=gateways.jobs_keep_seed
        ))
    pool = container.gateways.pool()
    await pool.open(wait=True)
    await pool.wait()
    confirm = container.use_cases.confirm_order()
    logs: list[Any] = []

    def call(user: UserId, quote_id: str, token: str) -> Any:
        async def run() -> None:
            log: list[Any] = []
            _recording.set(log if record else None)
            await confirm(uc.ConfirmOrderCommand(user, quote_id, token))
            logs.append(log)

        return run

    seconds, latencies = await drive([call(*q) for q in quotes], clients)
    await pool.close()
    return seconds, latencies, logs


async def raw_wave(url: str, logs: list[list[tuple[str, str, Any]]], clients: int, pool_size: int) -> float:
    pool = AsyncConnectionPool(
        url,
        min_size=pool_size,
        max_size=pool_size,
        open=False,
        kwargs=RAW_CONNECTION,
    )
    await pool.open(wait=True)

    def call(log: list[tuple[str, str, Any]]) -> Any:
        async def run() -> None:
            async with pool.connection() as conn:
                await replay(conn, log)

        return run

    seconds, _ = await drive([call(log) for log in logs], clients)
    await pool.close()
    return seconds


# The unit of work sends BEGIN itself (with its first read), so the replay's connections
# are in autocommit too and send exactly the recorded statements.
RAW_CONNECTION = {"prepare_threshold": None if LITERAL else 0, "autocommit": True}


async def replay(conn: psycopg.AsyncConnection[Any], log: list[tuple[str, str, Any]]) -> None:
    """The recorded statements of one confirmation, bare: prepared reads and simple queries,
    each one's rows fetched as the unit of work fetches them."""
    for kind, query, params in log:
        if kind == "read":
            await (await conn.execute(sql(query), params)).fetchone()
            continue
        cursor = conn.cursor()
        await cursor.execute(query, prepare=False)
        while True:
            if cursor.pgresult is not None and cursor.pgresult.ntuples:
                await cursor.fetchone()
            if not cursor.nextset():
                break


def clone(pg: Any, source: str, name: str) -> str:
    if pg.database_exists(name):
        pg.drop_database(name)
    pg.create_database(name, template=source)
    return pg.url(name)


async def _timed_share(
    kind: str, url: str, items: list[Any], clients: int, pool_size: int, start_at: float, now: datetime,
    warm: list[Any],
) -> tuple[float, float, list[float]]:
    """One process's share of a wave, started at a common instant; returns begin, end, latencies.
    The `warm` items go first, `pool_size` at a time so each connection of the pool serves some."""
    if kind == "app":
        container = service(url, pool_size=pool_size, clock=ManualClock(now))
        pool = container.gateways.pool()
        confirm = container.use_cases.confirm_order()

        def call(item: Any) -> Any:
            return lambda: confirm(uc.ConfirmOrderCommand(*item))
    else:
        pool = AsyncConnectionPool(url, min_size=pool_size, max_size=pool_size, open=False, kwargs=RAW_CONNECTION)

        def call(item: Any) -> Any:
            async def run() -> None:
                async with pool.connection() as conn:
                    await replay(conn, item)

            return run

    await pool.open(wait=True)
    await pool.wait()
    await drive([call(item) for item in warm], pool_size)
    calls = [call(item) for item in items]
    heap.settle()  # as core does once it has started, before it serves
    await asyncio.sleep(max(0.0, start_at - time.time()))
    began = time.time()
    _, latencies = await drive(calls, clients)
    ended = time.time()
    await pool.close()
    return began, ended, latencies


def _share(args: tuple[Any, ...]) -> tuple[float, float, list[float]]:
    return uvloop.run(_timed_share(*args))


def wave(
    kind: str, url: str, items: list[Any], clients: int, pool_size: int, processes: int, now: datetime,
    warm: list[Any] | None = None,
) -> tuple[float, list[float]]:
    """The wave split over `processes` application processes (as core would run them),
    `clients` concurrent callers and `pool_size` connections in all, each process's pool warmed
    by its share of `warm` first (None: a cold wave, on fresh connections)."""
    warm = warm or []
    start_at = time.time() + 2.0 + processes + len(warm) * 0.01
    shares = [
        (kind, url, items[i::processes], max(1, clients // processes), max(1, pool_size // processes), start_at, now,
         warm[i::processes])
        for i in range(processes)
    ]
    with concurrent.futures.ProcessPoolExecutor(processes, mp_context=multiprocessing.get_context("spawn")) as ex:
        results = list(ex.map(_share, shares))
    seconds = max(end for _, end, _ in results) - min(begin for begin, _, _ in results)
    return seconds, [lat for _, _, lats in results for lat in lats]


def _statements(step: str, query: str, params: Any) -> int:
    if step != "batch":
        return 1
    return 1 + query.startswith(b"BEGIN;") + query.endswith(b"\nCOMMIT")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--orders", type=int, default=1000)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--pool", type=int, default=10)
    parser.add_argument("--processes", type=int, default=2, help="application processes (core workers)")
    parser.add_argument("--rounds", type=int, default=3, help="alternating application and raw waves, medians")
    parser.add_argument("--warm", type=int, default=40, help="orders of other users each wave's pools serve first")
    parser.add_argument(
        "--setting", action="append", default=[], metavar="NAME=VALUE",
        help="a server setting to evaluate (commit_delay=1000, say); the headline uses none",
    )
    args = parser.parse_args()
    settings = dict(item.split("=", 1) for item in args.setting)
    now = datetime.now(UTC)
    clock = ManualClock(now)
    # The application's wave and the raw replay run on the same server, durable by default
    # (_support.server), so the ratio compares like with like.
    figures: dict[str, Any] = {"bench": "confirm_wave", **({"settings": settings} if settings else {})}
    with server(**settings) as pg:
        fresh_database(pg, "distinct_setup")
        distinct, warm = uvloop.run(prepare(pg.url("distinct_setup"), args.orders, 1, clock, args.warm))
        fresh_database(pg, "fifty_setup")
        fifty, fifty_warm = uvloop.run(prepare(pg.url("fifty_setup"), 50, args.orders // 50, clock, args.warm))
        # The statements each confirmation issues, recorded once, replayed bare below.
        _, _, logs = uvloop.run(
            app_wave(clone(pg, "distinct_setup", "distinct_rec"), distinct + warm, args.clients, args.pool, clock,
                     record=True)
        )
        logs, warm_logs = logs[:args.orders], logs[args.orders:]
        cold = {
            "cold_seconds": round(wave("app", clone(pg, "distinct_setup", "app_cold"), distinct, args.clients,
                                       args.pool, args.processes, now)[0], 3),
            "cold_raw_sql_seconds": round(wave("raw", clone(pg, "distinct_setup", "raw_cold"), logs, args.clients,
                                               args.pool, args.processes, now)[0], 3),
        }
        pg.drop_database("app_cold")
        pg.drop_database("raw_cold")
        for processes in sorted({1, args.processes}):
            # The headline alternates the two waves `--rounds` times and takes each one's median:
            # on a shared machine one pair, run a minute apart, gave ratios from 0.41 to 1.2.
            apps: list[float] = []
            raws: list[float] = []
            latencies: list[float] = []
            for n in range(args.rounds if processes == args.processes else 1):
                seconds, round_latencies = wave(
                    "app", clone(pg, "distinct_setup", f"app_{processes}_{n}"), distinct, args.clients, args.pool,
                    processes, now, warm,
                )
                raw, _ = wave(
                    "raw", clone(pg, "distinct_setup", f"raw_{processes}_{n}"), logs, args.clients, args.pool,
                    processes, now, warm_logs,
                )
                apps.append(seconds)
                raws.append(raw)
                latencies += round_latencies  # p95 over every round's confirmations
                pg.drop_database(f"app_{processes}_{n}")
                pg.drop_database(f"raw_{processes}_{n}")
            seconds, raw = statistics.median(apps), statistics.median(raws)
            fifty_seconds, fifty_latencies = wave(
                "app", clone(pg, "fifty_setup", f"fifty_{processes}"), fifty, args.clients, args.pool, processes, now,
                fifty_warm,
            )
            run = {
                "processes": processes,
                "orders": len(distinct),
                "users": len(distinct),
                "clients": args.clients,
                "pool": args.pool,
                "seconds": round(seconds, 3),
                "per_s": round(len(distinct) / seconds, 1),
                "p95_ms": round(p95(latencies) * 1000, 2),
                "raw_sql_seconds": round(raw, 3),
                "ratio_to_raw": round(raw / seconds, 3),
                "rounds": {"seconds": [round(a, 3) for a in apps], "raw_sql_seconds": [round(r, 3) for r in raws]},
                "fifty_users": {
                    "orders": len(fifty),
                    "seconds": round(fifty_seconds, 3),
                    "per_s": round(len(fifty) / fifty_seconds, 1),
                    "p95_ms": round(p95(fifty_latencies) * 1000, 2),
                },
            }
            if processes == args.processes:
                figures.update(run | cold)
            else:
                figures["single_process"] = run
    figures["statements_per_order"] = round(
        sum(_statements(step, query, params) for log in logs for step, query, params in log) / len(logs), 2
    )
    figures["round_trips_per_order"] = round(sum(len(log) for log in logs) / len(logs), 2)
    emit(figures)


if __name__ == "__main__":
    main()
