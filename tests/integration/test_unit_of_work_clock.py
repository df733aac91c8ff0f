"""A commit takes its time from the Clock the unit of work was given, not from the machine:
what it stamps at commit (a new account's creation) says the clock's time."""

from __future__ import annotations

from datetime import UTC, datetime

import psycopg

from videocopies.adapters.memory import ManualClock
from videocopies.adapters.postgres.pool import make_pool
from videocopies.adapters.postgres.unit_of_work import PostgresUnitOfWork
from videocopies.domain.coins import CoinAccount
from videocopies.domain.shared import UserId
from videocopies.embedded.postgres import LocalPostgres


async def test_a_commit_stamps_the_clocks_time(pg_server: LocalPostgres, database: str) -> None:
    url = pg_server.url(database)
    clock = ManualClock(datetime(2031, 5, 4, 3, 2, 1, tzinfo=UTC))
    pool = make_pool(url, max_size=2, direct=True)
    await pool.open(wait=True, timeout=30)
    try:
        async with PostgresUnitOfWork(pool, clock) as uow:
            await uow.accounts.add(CoinAccount(UserId(41)))
            await uow.commit()
    finally:
        await pool.close()
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        cur = await conn.execute("SELECT created_at FROM coin_accounts WHERE user_id = 41")
        assert await cur.fetchall() == [(clock.now(),)]


async def test_where_the_provider_was_read_is_stamped_with_the_clocks_time(
    pg_server: LocalPostgres, database: str
) -> None:
    url = pg_server.url(database)
    clock = ManualClock(datetime(2031, 5, 4, 3, 2, 1, tzinfo=UTC))
    pool = make_pool(url, max_size=2, direct=True)
    await pool.open(wait=True, timeout=30)
    try:
        async with PostgresUnitOfWork(pool, clock) as uow:
            await uow.claims.record([], 5)
            await uow.commit()
    finally:
        await pool.close()
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        cur = await conn.execute("SELECT position, read_at FROM provider_cursor")
        assert await cur.fetchall() == [(5, clock.now())]
