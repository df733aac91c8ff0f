"""Pruning as core's duty: a core prunes on its own every VIDEOCOPIES_PRUNE_EVERY_S, and of two
cores only the one holding the `prune-tables` duty prunes, the other taking over once the
holder is gone."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from typing import Any

import psycopg
from psycopg_pool import AsyncConnectionPool

from videocopies.adapters.postgres.duties import PostgresDutyLeases
from videocopies.adapters.postgres.retention import PostgresTransientRows
from videocopies.adapters.system import SystemClock
from videocopies.application.duties import HoldDuty
from videocopies.application.retention import PruneTables, keep_pruning
from videocopies.domain.retention import RetentionPolicy, Transient
from videocopies.embedded.postgres import LocalPostgres

from .core_api import serve_core

NOW_ONLY = RetentionPolicy(*(timedelta(0),) * 5)


def add_processed_events(url: str, first: int, count: int) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO inbox (update_id, user_id, kind, payload, received_at, processed_at)"
            " SELECT n, 7, 'text', '{}', now() - interval '1 hour', now() - interval '1 hour'"
            " FROM generate_series(%s::bigint, %s::bigint) n", [first, first + count - 1],
        )


def inbox_rows(url: str) -> int:
    with psycopg.connect(url) as conn:
        return int(conn.execute("SELECT count(*) FROM inbox").fetchone()[0])


async def until(check: Any, timeout: float = 15.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not check():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.05)


async def test_core_prunes_on_its_own_under_the_duty(pg_server: LocalPostgres, database: str) -> None:
    url = pg_server.url(database)
    add_processed_events(url, 1, 25)
    settings = {"retention": NOW_ONLY, "prune_every": timedelta(seconds=0.2), "prune_batch": 10}
    async for core in serve_core(url, settings=settings):
        await until(lambda: inbox_rows(url) == 0)
        add_processed_events(url, 100, 5)  # the next pass takes these too
        await until(lambda: inbox_rows(url) == 0)
        (holder,) = await core.rows("SELECT holder FROM duty_leases WHERE duty = 'prune-tables'")
        assert holder[0].startswith("core@")


async def test_a_core_without_the_duty_does_not_prune_and_takes_over_when_the_holder_stops(
    pg_server: LocalPostgres, database: str
) -> None:
    url = pg_server.url(database)
    add_processed_events(url, 1, 30)
    pruned: dict[str, int] = {"a": 0, "b": 0}

    class Counted:
        def __init__(self, rows: PostgresTransientRows, name: str) -> None:
            self.rows, self.name = rows, name

        async def prune(self, table: Transient, cutoff: datetime, batch: int | None, dry_run: bool) -> Any:
            async for count in self.rows.prune(table, cutoff, batch, dry_run):
                pruned[self.name] += count
                yield count

    async with AsyncConnectionPool(url, min_size=1, max_size=2, open=False) as pool:
        clock, stops = SystemClock(), {"a": asyncio.Event(), "b": asyncio.Event()}

        def node(name: str) -> asyncio.Task[None]:
            prune = PruneTables(Counted(PostgresTransientRows(pool), name), clock, NOW_ONLY, batch=5)
            hold = HoldDuty(PostgresDutyLeases(pool), clock, timedelta(seconds=1))
            return asyncio.create_task(
                keep_pruning(prune, hold, clock, name, f"token-{name}", timedelta(seconds=0.1), stops[name])
            )

        a = node("a")
        await until(lambda: pruned["a"] == 30)
        b = node("b")
        add_processed_events(url, 100, 10)
        await until(lambda: pruned["a"] == 40)
        assert pruned["b"] == 0  # a keeps renewing its lease; b never holds the duty meanwhile

        stops["a"].set()
        await a
        add_processed_events(url, 200, 10)
        await until(lambda: pruned["b"] == 10)  # once a's lease ran out (1 s)
        stops["b"].set()
        await b
    assert inbox_rows(url) == 0
