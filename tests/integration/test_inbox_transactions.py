"""Confirming an order from a button press costs at most two transactions: edge's store of the
press, then one for everything core does with it (the user's events claimed, the order
confirmed, the event marked done, the reply queued). Counted as the server sees them: the
COMMITs and ROLLBACKs that pg_stat_statements recorded for the database. And the turn keeps
the inbox's promises: an event undone alone, a dead turn leaving its events, a user stored
again while held never forgotten."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest

from videocopies.adapters.postgres import migrate
from videocopies.adapters.screens import render
from videocopies.application.ports import BotUser, InboxEvent, StoredVideo
from videocopies.application.use_cases.joined import joining
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

    async def rows(self, query: str) -> list[tuple[Any, ...]]:
        async with await psycopg.AsyncConnection.connect(self.url, autocommit=True) as conn:
            cur = await conn.execute(query)  # type: ignore[arg-type]
            return await cur.fetchall()

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


async def quoted(bot: Bot) -> str:
    """Anna has 50 coins, a stored video and a quote for 5 copies (20 coins): the confirm button."""
    video = StoredVideo("f", 4_000_000, 10.0, 720, 1280, "video/mp4", "sources/9/1.mp4", "0" * 64)
    for kind, fields in [("text", {"text": "/start"}), ("video", {"video": video})]:
        await bot.store(kind, **fields)
        await bot.processor.turn()
    (_, choose) = await bot.said()
    await bot.store("button", data=choose.buttons[0][1].data)  # 5 copies
    await bot.processor.turn()
    (quote,) = await bot.said()
    return str(quote.buttons[0][0].data)


async def test_a_confirm_press_is_one_transaction_after_edge_stored_it(bot: Bot) -> None:
    await bot.store("button", data=await quoted(bot))  # confirm
    before = await bot.transactions()
    assert await bot.processor.turn() == 1
    after = await bot.transactions()

    (confirmed,) = await bot.said()
    assert "20 coins reserved" in confirmed.text, confirmed.text
    assert after - before == 1, f"core ran {after - before} transactions for one confirm press"
    # Nothing is left for the next turn: the event is done, its user no longer waits.
    assert await bot.processor.turn() == 0


async def test_a_confirmation_the_database_refuses_is_undone_alone_and_the_queue_goes_on(bot: Bot) -> None:
    """No capacity slot: the confirm's writes are refused inside the turn (take_slot), the user
    is told the service is busy, nothing stays reserved, and the next event is answered."""
    confirm = await quoted(bot)
    migrate.set_capacity(bot.url, 0)
    await bot.store("button", data=confirm)
    await bot.store("text", text="/balance")
    assert await bot.processor.turn() == 2
    busy, balance = await bot.said()
    assert busy == render("screen", {"screen": "busy"}, "en")
    assert balance.text.startswith("Available: 50 coins") and "Reserved for orders in progress: 0" in balance.text
    assert await bot.rows("SELECT count(*) FROM orders WHERE state <> 'quoted'") == [(0,)]


async def test_an_event_that_fails_after_its_use_case_wrote_is_undone_and_marked_done(bot: Bot) -> None:
    confirm = await quoted(bot)
    conversation = bot.service.bot.conversation()
    real = conversation.confirm_order

    async def confirm_then_fail(command: Any) -> Any:
        await real(command)  # its writes are sent inside the turn's transaction...
        raise RuntimeError("after the confirmation")  # ...and must not stay

    conversation.confirm_order = confirm_then_fail
    await bot.store("button", data=confirm)
    await bot.store("text", text="/balance")
    assert await bot.processor.turn() == 2
    error, balance = await bot.said()
    assert error == render("screen", {"screen": "unknown"}, "en")
    assert "Reserved for orders in progress: 0" in balance.text
    assert await bot.rows("SELECT count(*) FROM orders WHERE state <> 'quoted'") == [(0,)]
    assert await bot.rows("SELECT outcome FROM inbox WHERE update_id = 4") == [
        ("error: RuntimeError: after the confirmation",)
    ]
    conversation.confirm_order = real
    await bot.store("button", data=confirm)  # pressed again: now it goes through
    await bot.processor.turn()
    (confirmed,) = await bot.said()
    assert "20 coins reserved" in confirmed.text


async def test_a_turn_that_dies_leaves_its_events_and_holds_nobody(bot: Bot) -> None:
    confirm = await quoted(bot)
    await bot.store("button", data=confirm)
    with pytest.raises(RuntimeError):
        async with bot.inbox.turn() as turn:
            (event,) = await turn.claim(datetime.now(UTC), 10, 10)
            with joining(turn.uow):
                await bot.service.bot.conversation().handle(event)
            raise RuntimeError("the processor dies before its commit")
    assert await bot.rows("SELECT count(*) FROM orders WHERE state <> 'quoted'") == [(0,)]
    assert await bot.said() == []
    assert await bot.processor.turn() == 1  # the next turn handles it, once
    (confirmed,) = await bot.said()
    assert "20 coins reserved" in confirmed.text


async def test_an_event_stored_while_its_user_is_in_a_turn_waits_for_it_and_is_not_forgotten(bot: Bot) -> None:
    await bot.store("text", text="/help")
    async with bot.inbox.turn() as turn:
        (event,) = await turn.claim(datetime.now(UTC), 10, 10)
        turn.done([(event, [], "ok")])
        storing = asyncio.ensure_future(bot.store("text", text="/balance"))
        await asyncio.sleep(0.3)
        assert not storing.done()  # edge waits for the turn that holds this user
        await turn.commit()
    await asyncio.wait_for(storing, 10)
    assert await bot.rows("SELECT count(*) FROM inbox_users") == [(1,)]
    assert await bot.processor.turn() == 1
    (balance,) = await bot.said()
    assert balance.text.startswith("Available:")


async def test_a_user_stored_by_an_event_that_was_undone_is_stored_again(bot: Bot) -> None:
    """The conversation's memory of stored users follows the commit: an event undone took the
    user's row with it, and the next one must write it again (or the video is not kept)."""
    conversation = bot.service.bot.conversation()
    real = conversation.grant_coins

    class Failing:
        async def many(self, *args: Any) -> Any:
            raise RuntimeError("the grant failed")

    conversation.grant_coins = Failing()
    await bot.store("text", text="/start")  # a newcomer: stored, then undone with the event
    assert await bot.processor.turn() == 1
    conversation.grant_coins = real
    video = StoredVideo("f", 4_000_000, 10.0, 720, 1280, "video/mp4", "sources/9/1.mp4", "0" * 64)
    await bot.store("video", video=video)
    await bot.store("button", data="n:5")
    assert await bot.processor.turn() == 2
    (_, _, quote) = await bot.said()
    assert "5 copies" in quote.text, quote.text
