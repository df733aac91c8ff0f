"""The outbox claim on PostgreSQL: replies before copies, users taking turns among copies,
each user's messages in order and a few at a time, and a plan that walks indexes on a
table of 10,000 unsent rows."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import psycopg
import pytest

from videocopies.adapters.postgres.outbox import PostgresOutboxQueue
from videocopies.adapters.postgres.pool import make_pool
from videocopies.adapters.postgres.queries import sql
from videocopies.application.ports import OutboxMessage
from videocopies.domain.shared import UserId
from videocopies.embedded.postgres import LocalPostgres

_keys = itertools.count(1)


def copy(user: int, index: int) -> OutboxMessage:
    payload = {"order_id": f"o-{user}", "index": index, "copies": 10, "object_key": f"copies/o-{user}/{index}.mp4"}
    return OutboxMessage(UserId(user), "copy_ready", payload, f"k{next(_keys)}")


def screen(user: int, name: str = "welcome") -> OutboxMessage:
    return OutboxMessage(UserId(user), "screen", {"screen": name}, f"k{next(_keys)}")


@pytest.fixture
async def outbox(pg_server: LocalPostgres, database: str) -> AsyncIterator[PostgresOutboxQueue]:
    pool = make_pool(pg_server.url(database), max_size=2, direct=True)
    await pool.open(wait=True)
    try:
        yield PostgresOutboxQueue(pool)
    finally:
        await pool.close()


def now() -> datetime:
    return datetime.now(UTC)


async def test_welcomes_queued_behind_a_thousand_copies_go_first(outbox: PostgresOutboxQueue) -> None:
    await outbox.queue([copy(user, i) for user in range(1, 101) for i in range(10)])
    await outbox.queue([screen(1000 + n) for n in range(50)])
    claimed = await outbox.claim(now(), 100)
    assert [m.kind for m in claimed[:50]] == ["screen"] * 50
    assert [m.user_id for m in claimed[:50]] == [1000 + n for n in range(50)]
    # The other half: the first copy of fifty users, not ten copies of five.
    assert {m.kind for m in claimed[50:]} == {"copy_ready"}
    assert len({m.user_id for m in claimed[50:]}) == 50
    assert {m.payload["index"] for m in claimed[50:]} == {0}


async def test_copies_take_turns_across_users(outbox: PostgresOutboxQueue) -> None:
    a, b, c = 1, 2, 3
    await outbox.queue([copy(a, i) for i in range(10)] + [copy(b, 0), copy(c, 0)])
    claimed = await outbox.claim(now(), 3)
    assert [(m.user_id, m.payload["index"]) for m in claimed] == [(a, 0), (b, 0), (c, 0)]


async def test_a_users_messages_stay_in_order_and_a_few_at_a_time(outbox: PostgresOutboxQueue) -> None:
    # A quote behind copies waits for them; a user's next messages wait while one is held.
    await outbox.queue([copy(7, 0), copy(7, 1), screen(7, "order_done"), copy(7, 2), copy(7, 3)])
    await outbox.queue([screen(8, "help") for _ in range(5)])
    first = await outbox.claim(now(), 100, per_user=3)
    mine = [(m.kind, m.payload.get("index", m.payload.get("screen"))) for m in first if m.user_id == 7]
    assert mine == [("copy_ready", 0), ("copy_ready", 1), ("screen", "order_done")]
    assert [m.user_id for m in first].count(8) == 3
    assert [m.user_id for m in first][:3] == [8, 8, 8]  # replies first
    assert await outbox.claim(now(), 100) == []  # the rest wait behind held messages
    await outbox.sent_many([(m.message_id, {"message_id": 1}) for m in first])
    second = await outbox.claim(now(), 100)
    assert [(m.user_id, m.payload.get("index")) for m in second] == [(8, None), (8, None), (7, 2), (7, 3)]


async def test_a_message_held_for_a_retry_holds_back_its_users_later_ones(outbox: PostgresOutboxQueue) -> None:
    await outbox.queue([copy(5, 0), copy(5, 1), screen(6)])
    (first, *_) = await outbox.claim(now(), 1)
    assert first.user_id == 6
    c0, c1 = await outbox.claim(now(), 10)
    await outbox.sent(c1.message_id, {"message_id": 2})  # hypothetically: copy 1 is done, copy 0 waits
    await outbox.retry_later(c0.message_id, now() + timedelta(seconds=30))
    assert await outbox.claim(now(), 10) == []
    later = await outbox.claim(now() + timedelta(seconds=31), 10)
    assert [m.message_id for m in later] == [c0.message_id]
    assert later[0].attempts == 2


@pytest.mark.parametrize(("copies", "welcomes"), [(1000, 9000), (9980, 20)])
async def test_a_claim_walks_indexes_on_ten_thousand_unsent_rows(
    pg_server: LocalPostgres, database: str, copies: int, welcomes: int
) -> None:
    url = pg_server.url(database)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("""
            INSERT INTO outbox (user_id, kind, payload, dedup_key, created_at, sent_at)
            SELECT 100000 + g % 5000, 'screen', '{"screen": "help"}', 'sent-' || g, now(), now()
              FROM generate_series(1, 20000) g""")
        conn.execute("""
            INSERT INTO outbox (user_id, kind, payload, dedup_key, created_at)
            SELECT 1 + (g - 1) / 10, 'copy_ready', jsonb_build_object('order_id', 'o', 'index', mod(g - 1, 10)),
                   'copy-' || g, now()
              FROM generate_series(1, %s) g""", [copies])
        conn.execute("""
            INSERT INTO outbox (user_id, kind, payload, dedup_key, created_at)
            SELECT 50000 + g, 'screen', '{"screen": "welcome"}', 'welcome-' || g, now()
              FROM generate_series(1, %s) g""", [welcomes])
        conn.execute("ANALYZE outbox")
        conn.execute("ANALYZE bot_users")
        params = {"now": now(), "until": now() + timedelta(seconds=60), "limit": 200, "per_user": 3}
        with conn.transaction():
            explained = conn.execute("EXPLAIN (ANALYZE) " + sql("claim_outbox"), params).fetchall()
            plan = "\n".join(row[0] for row in explained)
            claimed = conn.execute(sql("claim_outbox"), params).fetchall()
            raise psycopg.Rollback()
    assert len(claimed) == 200
    assert "Seq Scan on outbox" not in plan, plan
    assert "ix_outbox_replies_pending" in plan, plan
    if welcomes >= 200:  # replies filled the batch: the copies' turns were never worked out
        assert "never executed" in plan, plan
    else:  # the users with copies were found through their own index, one step each
        assert "Index Only Scan using ix_outbox_copies_pending" in plan, plan
