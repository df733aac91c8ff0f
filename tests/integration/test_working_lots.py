"""An account is loaded with its working lots, not every lot it ever had (migration 0027): a
user with hundreds of spent purchases costs a confirmation or a completion what a new user
costs, and the balance still counts every coin."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import psycopg
import pytest

from videocopies.adapters.postgres.pool import make_pool
from videocopies.adapters.postgres.unit_of_work import PostgresUnitOfWork
from videocopies.domain.coins import CoinAccount, LotKind
from videocopies.domain.shared import LotId, OrderId, UserId

USER = UserId(77)
SPENT = 300


def _spend_history(url: str) -> None:
    """SPENT purchase lots of 10 coins: 7 debited, 2 expired, 1 refunded, none left."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO coin_lots (lot_id, user_id, kind, amount, granted_at, expires_at, available, debited,"
            " expired, refunded)"
            " SELECT 'old-' || n, %s, 'purchase', 10, now() - interval '1 year', now() - interval '1 day', 0, 7, 2, 1"
            " FROM generate_series(1, %s) AS n",
            (USER, SPENT),
        )


async def _account(url: str, read: str, lots: list[LotId] | None = None) -> CoinAccount:
    pool = make_pool(url, min_size=1, max_size=1)
    await pool.open(wait=True)
    try:
        async with PostgresUnitOfWork(pool) as uow:
            if read == "prefetch":
                await uow.prefetch(accounts=[USER], lots=lots or [])
            account = await uow.accounts.get(USER, lots or [])
            assert account is not None
            return account
    finally:
        await pool.close()


@pytest.mark.parametrize("read", ["get", "prefetch"])
async def test_spent_lots_stay_in_the_store_and_still_count_in_the_balance(database_url: str, read: str) -> None:
    now = datetime.now(UTC)
    pool = make_pool(database_url, min_size=1, max_size=1)
    await pool.open(wait=True)
    try:
        async with PostgresUnitOfWork(pool) as uow:
            account = CoinAccount(USER)
            account.grant(LotId("live"), LotKind.START, 50, now, now + timedelta(days=30))
            account.grant(LotId("held"), LotKind.MANUAL, 5, now, now + timedelta(days=1))
            account.reserve(OrderId("o-1"), 8, now)  # 5 of "held" (it expires first), 3 of "live"
            await uow.accounts.add(account)
            await uow.commit()
    finally:
        await pool.close()
    _spend_history(database_url)

    loaded = await _account(database_url, read)
    # "held" has no coin available, but an open reservation holds from it: a debit needs it.
    assert sorted(lot.lot_id for lot in loaded.lots) == ["held", "live"]
    balance = loaded.balance(now)
    assert (balance.granted, balance.available, balance.reserved) == (55 + 10 * SPENT, 47, 8)
    assert (balance.debited, balance.expired, balance.refunded) == (7 * SPENT, 2 * SPENT, SPENT)
    assert balance.balanced

    named = await _account(database_url, read, [LotId("old-3"), LotId("no-such-lot")])
    assert sorted(lot.lot_id for lot in named.lots) == ["held", "live", "old-3"]
    assert named.balance(now) == balance  # the same coins, one more of them loaded


async def test_a_lot_named_after_the_load_joins_the_account_and_leaves_the_spent_totals(database_url: str) -> None:
    now = datetime.now(UTC)
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("INSERT INTO coin_accounts (user_id, version, created_at) VALUES (%s, 1, now())", (USER,))
    _spend_history(database_url)
    pool = make_pool(database_url, min_size=1, max_size=1)
    await pool.open(wait=True)
    try:
        async with PostgresUnitOfWork(pool) as uow:
            await uow.prefetch(accounts=[USER])
            account = await uow.accounts.get(USER)
            assert account is not None and account.lots == []
            before = account.balance(now)
            again = await uow.accounts.get(USER, [LotId("old-9")])
            assert again is account and [lot.lot_id for lot in account.lots] == ["old-9"]
            assert account.balance(now) == before and before.granted == 10 * SPENT
            # Named again, found or not, a lot is not looked for a second time in the transaction.
            reads = 0
            fetchall = uow.fetchall

            async def counted(query: str, params: dict[str, object]) -> list[dict[str, object]]:
                nonlocal reads
                reads += 1
                return await fetchall(query, params)

            uow.fetchall = counted  # type: ignore[method-assign]
            await uow.accounts.get(USER, [LotId("old-9"), LotId("no-such-lot")])
            await uow.accounts.get(USER, [LotId("old-9"), LotId("no-such-lot")])
            assert reads == 1 and len(account.lots) == 1
    finally:
        await pool.close()


def test_code_of_the_previous_level_still_gets_every_lot(database_url: str) -> None:
    """Level 10 asks videocopies_load without `lots`: it gets every lot, as before 0027."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("INSERT INTO coin_accounts (user_id, version, created_at) VALUES (%s, 1, now())", (USER,))
    _spend_history(database_url)
    load = "SELECT videocopies_load(%s::jsonb)"
    with psycopg.connect(database_url) as conn:
        old = conn.execute(load, (json.dumps({"accounts": [USER]}),)).fetchone()
        new = conn.execute(load, (json.dumps({"accounts": [USER], "lots": []}),)).fetchone()
    assert old is not None and new is not None
    assert len(old[0]["accounts"][0]["lots"]) == SPENT
    assert new[0]["accounts"][0]["lots"] == []
