"""Confirming an order from a button press costs at most two transactions: edge's store of the
press, then one for everything core does with it (the user's events claimed, the order
confirmed, the event marked done, the reply queued). Counted as the server sees them: the
COMMITs and ROLLBACKs that pg_stat_statements recorded for the database."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import psycopg
import pytest

from videocopies.adapters.screens import render
from videocopies.application.ports import BotUser, InboxEvent, StoredVideo
from videocopies.domain.shared import UserId
from videocopies.embedded.postgres import LocalPostgres
from videocopies.roles.containers import PostgresService
from videocopies.settings import Settings

ANNA = BotUser(UserId(9), "en", "Anna")
_ENDS = r"^\s*(commit|rollback|end|abort)(\s+(work|transaction))?\s*;?\s*$"


class Bot:
    def __init__(self, service: Any, url: str) -> None:
        self.service, self.url = service, url
        self.inbox = service.gateways.inbox()
        self.processor = service.bot.inbox_processor()
        self.updates = 0
        self.seen = 0

    async def store(self, kind: str, **fields: Any) -> None:
        """What edge does with an update: store it (its own transaction)."""
        self.updates += 1
        event = InboxEvent(self.updates, ANNA, kind, **fields)
        assert await self.inbox.add([event], self.service.gateways.clock().now()) == 1

    async def said(self) -> list[Any]:
        async with await psycopg.AsyncConnection.connect(self.url, autocommit=True) as conn:
            cur = await conn.execute("SELECT id, kind, payload FROM outbox WHERE id > %s ORDER BY id", [self.seen])
            rows = await cur.fetchall()
        self.seen = max([self.seen, *(r[0] for r in rows)])
        return [render(kind, payload, "en") for _, kind, payload in rows]

    async def transactions(self) -> int:
        """Transactions ended in this database so far (each COMMIT or ROLLBACK the server ran)."""
        async with await psycopg.AsyncConnection.connect(self.url, autocommit=True) as conn:
            cur = await conn.execute(
                "SELECT coalesce(sum(calls), 0) FROM pg_stat_statements"
                " WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())"
                " AND query ~* %s",
                [_ENDS],
            )
            row = await cur.fetchone()
        assert row is not None
        return int(row[0])


@pytest.fixture
async def bot(pg_server: LocalPostgres, database: str) -> AsyncIterator[Bot]:
    url = pg_server.url(database)
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
    service = PostgresService(settings=Settings(quote_secret=b"inbox-transactions" * 2))
    service.gateways.config.from_dict({"database_url": url, "pool_size": 4, "direct": True})
    pool = service.gateways.pool()
    await pool.open(wait=True, timeout=30)
    try:
        yield Bot(service, url)
    finally:
        await pool.close()


@pytest.mark.xfail(strict=True, reason="today: lease, pending, orders_since, confirm, done, release (6)")
async def test_a_confirm_press_is_one_transaction_after_edge_stored_it(bot: Bot) -> None:
    video = StoredVideo("f", 4_000_000, 10.0, 720, 1280, "video/mp4", "sources/9/1.mp4", "0" * 64)
    for kind, fields in [("text", {"text": "/start"}), ("video", {"video": video})]:
        await bot.store(kind, **fields)
        await bot.processor.turn()
    (_, choose) = await bot.said()
    await bot.store("button", data=choose.buttons[0][1].data)  # 5 copies
    await bot.processor.turn()
    (quote,) = await bot.said()

    await bot.store("button", data=quote.buttons[0][0].data)  # confirm
    before = await bot.transactions()
    assert await bot.processor.turn() == 1
    after = await bot.transactions()

    (confirmed,) = await bot.said()
    assert "20 coins reserved" in confirmed.text, confirmed.text
    assert after - before <= 1, f"core ran {after - before} transactions for one confirm press"
    # Nothing is left for the next turn: the event is done, its user no longer waits.
    assert await bot.processor.turn() == 0
