"""A read that waited for a row lock must see what the previous lock holder committed,
not the lots and checkpoints of its own older snapshot."""

from __future__ import annotations

import asyncio
import threading
from datetime import UTC, datetime, timedelta

import psycopg
import pytest

from videocopies.adapters.postgres.pool import make_pool
from videocopies.adapters.postgres.unit_of_work import PostgresUnitOfWork
from videocopies.domain.coins import CoinAccount, LotKind
from videocopies.domain.shared import JobId, LotId, OrderId, OwnerToken, UserId, WorkerId


@pytest.mark.parametrize("read", ["get", "prefetch"])
async def test_an_account_read_after_waiting_for_its_lock_is_current(database_url: str, read: str) -> None:
    pool = make_pool(database_url, min_size=2, max_size=2)
    await pool.open(wait=True)
    now = datetime.now(UTC)
    try:
        async with PostgresUnitOfWork(pool) as uow:
            account = CoinAccount(UserId(5))
            account.grant(LotId("lot"), LotKind.START, 50, now, now + timedelta(days=1))
            await uow.accounts.add(account)
            await uow.commit()

        first = PostgresUnitOfWork(pool)
        async with first:
            holder = await first.accounts.get(UserId(5))
            holder.reserve("order-1", 20, now)
            # A second transaction asks for the same account and has to wait for the lock.
            async def second_reader() -> tuple[int, int]:
                async with PostgresUnitOfWork(pool) as second:
                    if read == "prefetch":  # the opening read (videocopies_load) that confirmations use
                        await second.prefetch(accounts=[UserId(5)])
                    seen = await second.accounts.get(UserId(5))
                    return seen.version, seen.balance(now).available

            waiting = asyncio.create_task(second_reader())
            await asyncio.sleep(0.3)
            assert not waiting.done()
            await first.commit()
        version, available = await asyncio.wait_for(waiting, 10)
        assert (version, available) == (holder.version, 30)
    finally:
        await pool.close()


def test_the_lagging_snapshot_is_what_the_reload_detects(database_url: str) -> None:
    """The mechanism itself: a FOR UPDATE that waited returns the new row, while a subquery
    of the same statement still reads the old one."""
    with psycopg.connect(database_url, autocommit=True, prepare_threshold=None) as setup:
        setup.execute("INSERT INTO coin_accounts (user_id, version, created_at) VALUES (9, 1, now())")
    a = psycopg.connect(database_url, prepare_threshold=None)
    b = psycopg.connect(database_url, prepare_threshold=None)
    try:
        a.execute("SELECT 1 FROM coin_accounts WHERE user_id = 9 FOR UPDATE")
        a.execute("UPDATE coin_accounts SET version = 2 WHERE user_id = 9")
        result: list[tuple[int, int]] = []
        reader = threading.Thread(
            target=lambda: result.append(
                b.execute(
                    "SELECT a.version, (SELECT s.version FROM coin_accounts s WHERE s.user_id = a.user_id) "
                    "FROM coin_accounts a WHERE a.user_id = 9 FOR UPDATE OF a"
                ).fetchone()
            )
        )
        reader.start()
        reader.join(0.3)
        assert reader.is_alive()
        a.commit()
        reader.join(10)
        assert result == [(2, 1)]
    finally:
        a.close()
        b.close()


_QUEUED_JOB = """
INSERT INTO coin_accounts (user_id, version, created_at) VALUES (11, 1, now());
INSERT INTO orders (order_id, user_id, source_key, copies, price_per_copy, total, tariff_version,
                    quote_expires_at, quote_token, seed, state, copy_states, created_at, version)
VALUES ('o11', 11, 's', 1, 1, 1, 1, now(), 't', 1, 'confirmed', '[]', now(), 1);
INSERT INTO jobs (job_id, order_id, state, plans, max_attempts, attempts, cancel_requested, created_at, version)
VALUES ('j11', 'o11', 'queued', '[]', 3, 0, false, now(), 0);
"""


@pytest.mark.parametrize("read", ["get", "prefetch"])
async def test_a_job_read_after_waiting_for_its_lock_is_current_and_brings_its_order(
    database_url: str, read: str
) -> None:
    """A completion's opening read (jobs with their orders and accounts, in one videocopies_load)
    and a single job's read each wait for a claimer's lock and then see what it committed."""
    with psycopg.connect(database_url, autocommit=True) as setup:
        setup.execute(_QUEUED_JOB)
    pool = make_pool(database_url, min_size=2, max_size=2)
    await pool.open(wait=True)
    now = datetime.now(UTC)
    try:
        async with PostgresUnitOfWork(pool) as first:
            (job,) = await first.jobs.claimable(now, 10)
            order = await first.orders.get(job.order_id)  # read with the claim, in its round trip
            job.claim(WorkerId("w1"), OwnerToken("t1"), now, timedelta(minutes=5))
            order.start()

            async def second_reader() -> tuple[str, int, str | None, str, bool]:
                async with PostgresUnitOfWork(pool) as second:
                    if read == "prefetch":
                        await second.prefetch(jobs=[JobId("j11")], their_orders=True, their_accounts=True)
                    seen = await second.jobs.get(JobId("j11"))
                    seen_order = await second.orders.get(OrderId("o11"))
                    account = await second.accounts.get(UserId(11))
                    lease = seen.lease
                    return (seen.state.value, seen.version, lease and lease.token, seen_order.state.value,
                            account is not None)

            waiting = asyncio.create_task(second_reader())
            await asyncio.sleep(0.3)
            assert not waiting.done()
            await first.commit()
        assert await asyncio.wait_for(waiting, 10) == ("leased", job.version, "t1", "running", True)
        async with PostgresUnitOfWork(pool) as third:
            assert await third.jobs.get(JobId("nope")) is None
            assert await third.jobs.claimable(now, 10) == []  # leased, and its lease runs
    finally:
        await pool.close()
