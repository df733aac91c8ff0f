"""A user's video whose source the lifecycle deleted is not quoted: the bot asks for it again.
And the race between a quote and the lifecycle's decision, on real PostgreSQL: a quote written
while the duty decides keeps its source, and a quote that comes while the store's delete is
under way is refused, with the same answer to the user."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import attrs
import psycopg
import pytest
from dependency_injector import providers

from videocopies.adapters.memory import ManualClock
from videocopies.adapters.objectstore.filesystem import FilesystemObjectStore
from videocopies.adapters.postgres.objects import PostgresObjectRows
from videocopies.adapters.screens import Screen, render
from videocopies.application import use_cases as uc
from videocopies.application.errors import Conflict
from videocopies.application.objects import SOURCE_GONE, ObjectLifecycle
from videocopies.application.ports import BotUser, InboxEvent, StoredVideo
from videocopies.domain.objects import Lifetimes
from videocopies.domain.shared import UserId
from videocopies.embedded.postgres import LocalPostgres
from videocopies.roles.containers import PostgresService
from videocopies.settings import Settings

ANNA = BotUser(UserId(9), "en", "Anna")
SOURCE = "sources/9/1.mp4"
VIDEO = StoredVideo("f", 4_000_000, 10.0, 720, 1280, "video/mp4", SOURCE, "0" * 64)
NOW = Lifetimes(timedelta(0), timedelta(days=1))  # a source goes as soon as nothing uses it
SEND_AGAIN = "The video you sent earlier is no longer kept. Please send it again."


@attrs.define
class Bot:
    url: str
    service: Any
    clock: ManualClock
    store: FilesystemObjectStore
    updates: int = 0
    seen: int = 0

    async def send(self, kind: str, **fields: Any) -> list[Screen]:
        self.updates += 1
        await self.service.gateways.inbox().add([InboxEvent(self.updates, ANNA, kind, **fields)], self.clock.now())
        processor = self.service.bot.inbox_processor()
        while await processor.turn():
            pass
        async with self.service.gateways.uow() as uow:
            rows = [(i, m) for i, m in await uow.outbox.pending(1000) if i > self.seen]
        self.seen = max([self.seen, *(i for i, _ in rows)])
        return [render(m.kind, m.payload, "en") for _, m in rows]

    def lifecycle(self, store: Any = None) -> ObjectLifecycle:
        rows = PostgresObjectRows(self.service.gateways.pool())
        return ObjectLifecycle(rows, store or self.store, self.clock, NOW)

    def state(self) -> tuple[str, bool]:
        with psycopg.connect(self.url) as conn:
            state, deciding = conn.execute(
                "SELECT state, deleted_at IS NOT NULL FROM stored_objects WHERE key = %s", [SOURCE]
            ).fetchone()  # type: ignore[misc]
        return state, deciding


@pytest.fixture
async def bot(pg_server: LocalPostgres, database: str, tmp_path: Path) -> AsyncIterator[Bot]:
    url = pg_server.url(database)
    service = PostgresService(settings=Settings(quote_secret=b"objects-sources" * 3))
    service.gateways.config.from_dict({"database_url": url, "pool_size": 4})
    clock = ManualClock(datetime.now(UTC))  # quotes are compared with the database's orders
    service.gateways.clock.override(providers.Object(clock))
    pool = service.gateways.pool()
    await pool.open(wait=True, timeout=30)
    store = FilesystemObjectStore(tmp_path / "objects")
    (tmp_path / "clip").write_bytes(b"clip")
    await store.put_file(SOURCE, tmp_path / "clip")
    try:
        bot = Bot(url, service, clock, store)
        (choose,) = await bot.send("video", video=VIDEO)
        assert choose.buttons, choose.text
        yield bot
    finally:
        await pool.close()


async def test_a_video_whose_source_was_deleted_is_asked_for_again(bot: Bot) -> None:
    await bot.lifecycle()()  # no order, no quote: the source goes
    assert bot.state() == ("deleted", True)
    assert await bot.store.keys("sources") == []
    (answer,) = await bot.send("button", data="n:5")
    assert answer.text == SEND_AGAIN and not answer.buttons
    (choose,) = await bot.send("video", video=attrs.evolve(VIDEO, source_key="sources/9/2.mp4"))
    assert choose.buttons  # a new video is taken as ever


async def test_a_quote_written_while_the_duty_decides_keeps_its_source(bot: Bot) -> None:
    quote = await asyncio.to_thread(psycopg.connect, bot.url)
    try:
        # A quote's transaction, open: its insert took the source's row (migration 0021).
        quote.execute(
            "INSERT INTO orders (order_id, user_id, source_key, copies, price_per_copy, total, tariff_version, "
            "quote_expires_at, quote_token, seed, state, copy_states, created_at, version) VALUES "
            "('q1', 9, %s, 5, 4, 20, 1, now() + interval '15 minutes', 't', 1, 'quoted', '[]', now(), 1)",
            [SOURCE],
        )
        sweep = asyncio.create_task(bot.lifecycle()())
        await asyncio.sleep(0.5)
        assert not sweep.done()  # the decision waits for the quote
        await asyncio.to_thread(quote.commit)
        result = await asyncio.wait_for(sweep, 30)
    finally:
        await asyncio.to_thread(quote.close)
    assert result.deleted["source"] == 0
    assert bot.state() == ("stored", False)
    assert await bot.store.keys("sources") == [SOURCE]
    await bot.lifecycle()()  # and the next pass too: the quote is live
    assert bot.state() == ("stored", False)


class _SlowStore:
    """The store's delete takes its time: the deletion is decided, the object not yet gone."""

    def __init__(self, store: FilesystemObjectStore) -> None:
        self.store, self.deleting, self.go_on = store, asyncio.Event(), asyncio.Event()

    async def keys(self, prefix: str) -> list[str]:
        return await self.store.keys(prefix)

    async def delete(self, key: str) -> None:
        self.deleting.set()
        await self.go_on.wait()
        await self.store.delete(key)


async def test_a_quote_that_comes_while_the_source_is_being_deleted_is_refused(bot: Bot) -> None:
    slow = _SlowStore(bot.store)
    sweep = asyncio.create_task(bot.lifecycle(slow)())
    await asyncio.wait_for(slow.deleting.wait(), 30)
    assert bot.state() == ("stored", True)  # decided, under way
    (answer,) = await bot.send("button", data="n:5")
    assert answer.text == SEND_AGAIN
    with pytest.raises(Conflict) as refused:  # a quote past the bot's look (written by the trigger's rule)
        await bot.service.use_cases.quote_order()(uc.QuoteOrderCommand(ANNA.user_id, SOURCE, 5, VIDEO.size))
    assert refused.value.kind == SOURCE_GONE
    with psycopg.connect(bot.url) as conn:
        assert conn.execute("SELECT count(*) FROM orders").fetchone() == (0,)  # no quote was made
    slow.go_on.set()
    assert (await asyncio.wait_for(sweep, 30)).deleted["source"] == 1
    assert bot.state() == ("deleted", True)


EXPIRED_QUOTE = (
    "INSERT INTO orders (order_id, user_id, source_key, copies, price_per_copy, total, tariff_version, "
    "quote_expires_at, quote_token, seed, state, copy_states, created_at, version) VALUES "
    "('q2', 9, %s, 5, 4, 20, 1, now() - interval '1 second', 't', 1, 'quoted', '[]', now(), 1)"
)
CONFIRM = "UPDATE orders SET state = 'confirmed', version = 2 WHERE order_id = 'q2'"


async def test_a_confirmation_written_while_the_duty_decides_keeps_its_source(bot: Bot) -> None:
    """The quote has just expired by the duty's clock, but a confirmation made in time is being
    written: the decision waits for it, and the confirmed order keeps its source."""
    with psycopg.connect(bot.url) as conn:
        conn.execute(EXPIRED_QUOTE, [SOURCE])
    confirm = await asyncio.to_thread(psycopg.connect, bot.url)
    try:
        confirm.execute(CONFIRM)
        sweep = asyncio.create_task(bot.lifecycle()())
        await asyncio.sleep(0.5)
        assert not sweep.done()  # the decision waits for the confirmation
        await asyncio.to_thread(confirm.commit)
        result = await asyncio.wait_for(sweep, 30)
    finally:
        await asyncio.to_thread(confirm.close)
    assert result.deleted["source"] == 0
    assert bot.state() == ("stored", False) and await bot.store.keys("sources") == [SOURCE]


async def test_a_confirmation_that_comes_while_the_source_is_being_deleted_is_refused(bot: Bot) -> None:
    with psycopg.connect(bot.url) as conn:
        conn.execute(EXPIRED_QUOTE, [SOURCE])
    slow = _SlowStore(bot.store)
    sweep = asyncio.create_task(bot.lifecycle(slow)())
    await asyncio.wait_for(slow.deleting.wait(), 30)
    with psycopg.connect(bot.url) as conn, pytest.raises(psycopg.Error) as refused:
        conn.execute(CONFIRM)
    assert refused.value.sqlstate == "VCS01" and refused.value.diag.message_detail == SOURCE
    slow.go_on.set()
    await asyncio.wait_for(sweep, 30)
    with psycopg.connect(bot.url) as conn:
        assert conn.execute("SELECT state FROM orders WHERE order_id = 'q2'").fetchone() == ("quoted",)
