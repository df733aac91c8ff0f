"""The bot's inbox and users in PostgreSQL.

Storing events inserts them (an update id seen before is skipped) and marks their users as
waiting in the same transaction. A processor leases a waiting user with SKIP LOCKED and a
time limit, so no transaction stays open while events are handled, and a dead processor's
users are taken over when the lease runs out. Each event is marked done in the transaction
that queues its replies.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

import attrs
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool

from videocopies.adapters.postgres.mappers import order_from_row
from videocopies.application.bot.events import BotUser, InboxEvent, StoredVideo
from videocopies.application.ports import OutboxMessage
from videocopies.domain.shared import OrderId, UserId

# Batches travel as one JSON document (json.dumps runs in C) rather than as arrays, which
# psycopg builds element by element in Python, escaping every string: in a burst of /start
# that was a sixth of core's CPU.
# One statement, sent without BEGIN and COMMIT: edge asks for Telegram's next page only once
# this returns, so every round trip here is a wait in the path of each update of a burst.
# The user is marked waiting with DO UPDATE, not DO NOTHING: it waits for a processor that is
# releasing this user right now, so the user is never forgotten with an event still waiting.
# Rows are locked in user id order, here and in release, so the two never deadlock.
_ADD = """
WITH added AS (
    INSERT INTO inbox (update_id, user_id, kind, payload, received_at)
    SELECT e.update_id, e.user_id, e.kind, e.payload, %(now)s::timestamptz
      FROM jsonb_to_recordset(%(events)s::jsonb) AS e(update_id bigint, user_id bigint, kind text, payload jsonb)
    ON CONFLICT (update_id) DO NOTHING
    RETURNING user_id
), waiting AS (
    INSERT INTO inbox_users (user_id, since)
    SELECT DISTINCT user_id, %(now)s::timestamptz FROM added ORDER BY 1
    ON CONFLICT (user_id) DO UPDATE SET since = inbox_users.since
)
SELECT count(*) FROM added
"""
# A user whose next event is a video edge is still fetching waits for it (edge completes the
# event, which frees the user), unless it has waited past the fetch timeout: then it is handled
# as a file that never came. The look is one probe of the pending index per candidate.
_LEASE = """
UPDATE inbox_users SET claimed_until = %(until)s
 WHERE user_id IN (SELECT u.user_id FROM inbox_users u
                    WHERE (u.claimed_until IS NULL OR u.claimed_until <= %(now)s)
                      AND NOT COALESCE((SELECT (i.payload->'video'->>'fetching')::boolean
                                                AND i.received_at > %(fetch_deadline)s
                                          FROM inbox i WHERE i.user_id = u.user_id AND i.processed_at IS NULL
                                         ORDER BY i.id LIMIT 1), false)
                    ORDER BY u.since LIMIT %(limit)s FOR UPDATE OF u SKIP LOCKED)
RETURNING user_id
"""
_PENDING = """
SELECT id, update_id, kind, payload, received_at FROM inbox WHERE user_id = ANY(%s) AND processed_at IS NULL
 ORDER BY id
"""
# The file came (or never will): the event takes edge's word, and its user is free at once.
_COMPLETE_VIDEO = """
WITH completed AS (
    UPDATE inbox SET payload = jsonb_set(payload, '{video}', %(video)s::jsonb)
     WHERE update_id = %(update_id)s AND user_id = %(user_id)s AND kind = 'video' AND processed_at IS NULL
       AND (payload->'video'->>'fetching')::boolean
    RETURNING user_id
), waiting AS (
    INSERT INTO inbox_users (user_id, since)
    SELECT user_id, now() FROM completed
    ON CONFLICT (user_id) DO NOTHING
)
SELECT count(*) FROM completed
"""
_FETCHING = """
SELECT id, update_id, kind, payload, received_at FROM inbox
 WHERE processed_at IS NULL AND kind = 'video' AND (payload->'video'->>'fetching')::boolean
 ORDER BY id LIMIT %s
"""
# The one video event edge may put a source for: stored by it, still waiting for its file.
_WAITING_FOR_FILE = """
SELECT 1 FROM inbox
 WHERE update_id = %(update_id)s AND user_id = %(user_id)s AND kind = 'video' AND processed_at IS NULL
   AND (payload->'video'->>'fetching')::boolean
"""
_QUEUE_REPLY = """
INSERT INTO outbox (user_id, kind, payload, dedup_key, created_at)
VALUES (%s, %s, %s, %s, now()) ON CONFLICT (dedup_key) DO NOTHING
"""
_QUEUE_REPLIES = """
INSERT INTO outbox (user_id, kind, payload, dedup_key, created_at)
SELECT (r.e->>'user_id')::bigint, r.e->>'kind', r.e->'payload', r.e->>'dedup_key', now()
  FROM jsonb_array_elements(%s::jsonb) WITH ORDINALITY AS r(e, n)
 ORDER BY r.n
ON CONFLICT (dedup_key) DO NOTHING
"""
# `= ANY` lets the planner find a batch's rows by primary key once the table has statistics
# (EXPLAIN, 200 of 10,000 rows: 1.0 ms against 2.4 ms when joined to the JSON alone, which
# hashed the whole table). A table never analyzed is scanned either way.
# A user who writes again can be reached again: handling an event they sent since they were
# found blocked clears `blocked_at` (through the partial index of blocked users, so it costs
# nothing while nobody is blocked). An event from before the block says nothing new.
_MARK_DONE = """
WITH reachable AS (
    UPDATE bot_users b SET blocked_at = NULL
     WHERE b.blocked_at IS NOT NULL AND b.user_id = ANY(%(users)s::bigint[])
       AND EXISTS (SELECT 1 FROM inbox i WHERE i.id = ANY(%(ids)s::bigint[]) AND i.user_id = b.user_id
                      AND i.received_at >= b.blocked_at)
)
UPDATE inbox SET processed_at = now(), outcome = d.outcome
  FROM jsonb_to_recordset(%(done)s::jsonb) AS d(id bigint, outcome text)
 WHERE inbox.id = d.id AND inbox.id = ANY(%(ids)s::bigint[])
"""
_MARK_ONE_DONE = """
WITH reachable AS (
    UPDATE bot_users b SET blocked_at = NULL
     WHERE b.blocked_at IS NOT NULL AND b.user_id = %(user)s
       AND b.blocked_at <= (SELECT i.received_at FROM inbox i WHERE i.id = %(id)s)
)
UPDATE inbox SET processed_at = now(), outcome = %(outcome)s WHERE id = %(id)s
"""
# An unreadable update whose user is unknown is kept as handled: there is nobody to answer.
_KEEP_UNREADABLE = """
INSERT INTO inbox (update_id, user_id, kind, payload, received_at, processed_at, outcome)
SELECT u.update_id, 0, 'unreadable', jsonb_build_object('reason', u.reason), %(now)s::timestamptz,
       %(now)s::timestamptz, 'unreadable'
  FROM jsonb_to_recordset(%(updates)s::jsonb) AS u(update_id bigint, reason text)
ON CONFLICT (update_id) DO NOTHING
"""
_REMEMBER = """
INSERT INTO bot_users (user_id, language, first_name, created_at)
SELECT u.user_id, u.language, u.first_name, %s::timestamptz
  FROM jsonb_to_recordset(%s::jsonb) AS u(user_id bigint, language text, first_name text)
ON CONFLICT (user_id) DO UPDATE SET language = EXCLUDED.language, first_name = EXCLUDED.first_name
RETURNING user_id, (xmax = 0)
"""
_HOLD = "SELECT 1 FROM inbox_users WHERE user_id = ANY(%s) ORDER BY user_id FOR UPDATE"
_FORGET = """
DELETE FROM inbox_users u WHERE u.user_id = ANY(%s)
   AND NOT EXISTS (SELECT 1 FROM inbox i WHERE i.user_id = u.user_id AND i.processed_at IS NULL)
"""


class PostgresInbox:
    def __init__(self, pool: AsyncConnectionPool, fetch_timeout: timedelta = timedelta(minutes=10)) -> None:
        self._pool = pool
        self._fetch_timeout = fetch_timeout  # as long as the processor waits for a file (InboxProcessor)

    async def add(self, events: Sequence[InboxEvent], now: datetime) -> int:
        if not events:
            return 0
        rows = [
            {"update_id": e.update_id, "user_id": e.user.user_id, "kind": e.kind, "payload": e.to_payload()}
            for e in events
        ]
        async with self._pool.connection() as conn:
            await conn.set_autocommit(True)  # one statement is one transaction
            try:
                cur = await conn.execute(_ADD, {"now": now, "events": Jsonb(rows)})
                row = await cur.fetchone()
            finally:
                await conn.set_autocommit(False)
        assert row is not None
        return int(row[0])

    async def keep_unreadable(self, updates: Sequence[tuple[int, str]], now: datetime) -> int:
        """Updates that could not be read and whose user is unknown (update id, reason): kept
        for the record, handled at once; returns how many were new."""
        if not updates:
            return 0
        async with self._pool.connection() as conn, conn.transaction():
            cur = await conn.execute(
                _KEEP_UNREADABLE, {"now": now, "updates": Jsonb([{"update_id": u, "reason": r} for u, r in updates])}
            )
            return cur.rowcount

    async def lease_users(self, now: datetime, seconds: float, limit: int) -> Sequence[UserId]:
        params = {"now": now, "until": now + timedelta(seconds=seconds), "limit": limit,
                  "fetch_deadline": now - self._fetch_timeout}
        async with self._pool.connection() as conn, conn.transaction():
            cur = await conn.execute(_LEASE, params)
            rows = await cur.fetchall()
        return [UserId(row[0]) for row in rows]

    async def pending(self, user_ids: Sequence[UserId]) -> Sequence[InboxEvent]:
        async with self._pool.connection() as conn:
            cur = await conn.execute(_PENDING, [list(user_ids)])
            rows = await cur.fetchall()
            await conn.commit()
        return [InboxEvent.from_payload(*row) for row in _events(rows)]

    async def complete_video(self, update_id: int, user_id: UserId, video: StoredVideo) -> bool:
        params = {"update_id": update_id, "user_id": user_id, "video": Jsonb(attrs.asdict(video))}
        async with self._pool.connection() as conn, conn.transaction():
            cur = await conn.execute(_COMPLETE_VIDEO, params)
            row = await cur.fetchone()
        return bool(row and row[0])

    async def waiting_for_file(self, update_id: int, user_id: UserId) -> bool:
        async with self._pool.connection() as conn:
            cur = await conn.execute(_WAITING_FOR_FILE, {"update_id": update_id, "user_id": user_id})
            row = await cur.fetchone()
            await conn.commit()
        return row is not None

    async def fetching(self, limit: int) -> Sequence[InboxEvent]:
        async with self._pool.connection() as conn:
            cur = await conn.execute(_FETCHING, [limit])
            rows = await cur.fetchall()
            await conn.commit()
        return [InboxEvent.from_payload(*row) for row in _events(rows)]

    async def done(self, event: InboxEvent, replies: Sequence[OutboxMessage], outcome: str) -> None:
        async with self._pool.connection() as conn, conn.transaction():
            for reply in replies:
                await conn.execute(_QUEUE_REPLY, [reply.user_id, reply.kind, Jsonb(reply.payload), reply.dedup_key])
            await conn.execute(_MARK_ONE_DONE, {"user": event.user.user_id, "outcome": outcome, "id": event.event_id})

    async def done_many(self, handled: Sequence[tuple[InboxEvent, Sequence[OutboxMessage], str]]) -> None:
        replies = [reply for _, queued, _ in handled for reply in queued]
        async with self._pool.connection() as conn, conn.transaction():
            if replies:
                await conn.execute(_QUEUE_REPLIES, [Jsonb([
                    {"user_id": r.user_id, "kind": r.kind, "payload": r.payload, "dedup_key": r.dedup_key}
                    for r in replies
                ])])
            await conn.execute(_MARK_DONE, {
                "users": sorted({e.user.user_id for e, _, _ in handled}),
                "done": Jsonb([{"id": e.event_id, "outcome": o} for e, _, o in handled]),
                "ids": [e.event_id for e, _, _ in handled],
            })

    async def release(self, user_ids: Sequence[UserId]) -> None:
        users = list(user_ids)
        async with self._pool.connection() as conn, conn.transaction():
            await conn.execute(_HOLD, [users])
            await conn.execute(_FORGET, [users])
            await conn.execute("UPDATE inbox_users SET claimed_until = NULL WHERE user_id = ANY(%s)", [users])

    async def backlog(self) -> int:
        """Users waiting to be handled (for metrics)."""
        async with self._pool.connection() as conn:
            cur = await conn.execute("SELECT count(*) FROM inbox_users")
            (count,) = await cur.fetchone()  # type: ignore[misc]
            await conn.commit()
        return int(count)


# A source is kept while its row says stored and no deletion was decided for it; a row that is
# missing was forgotten after its deletion.
_SOURCE = """
SELECT u.source, coalesce(s.state = 'stored' AND s.deleted_at IS NULL, false) AS kept
  FROM bot_users u LEFT JOIN stored_objects s ON s.key = u.source->>'source_key' AND s.kind = 'source'
 WHERE u.user_id = %s
"""


class PostgresBotUsers:
    def __init__(self, pool: AsyncConnectionPool) -> None:
        self._pool = pool

    async def remember(self, user: BotUser, now: datetime) -> bool:
        async with self._pool.connection() as conn, conn.transaction():
            cur = await conn.execute(
                "INSERT INTO bot_users (user_id, language, first_name, created_at) VALUES (%s, %s, %s, %s) "
                "ON CONFLICT (user_id) DO UPDATE SET language = EXCLUDED.language, first_name = EXCLUDED.first_name "
                "RETURNING (xmax = 0)",
                [user.user_id, user.language, user.first_name, now],
            )
            (inserted,) = await cur.fetchone()  # type: ignore[misc]
        return bool(inserted)

    async def remember_many(self, users: Sequence[BotUser], now: datetime) -> set[UserId]:
        latest = sorted({user.user_id: user for user in users}.values(), key=lambda u: u.user_id)
        async with self._pool.connection() as conn, conn.transaction():
            cur = await conn.execute(_REMEMBER, [now, Jsonb([
                {"user_id": u.user_id, "language": u.language, "first_name": u.first_name} for u in latest
            ])])
            rows = await cur.fetchall()
        return {UserId(user_id) for user_id, inserted in rows if inserted}

    async def set_source(self, user_id: UserId, video: StoredVideo | None) -> None:
        async with self._pool.connection() as conn, conn.transaction():
            await conn.execute(
                "UPDATE bot_users SET source = %s WHERE user_id = %s",
                [Jsonb(attrs.asdict(video)) if video else None, user_id],
            )

    async def source(self, user_id: UserId) -> StoredVideo | None:
        """The user's waiting video; its `source_key` is None once the store no longer keeps
        the file (the object lifecycle deleted it, or decided to: see migration 0021)."""
        row = await self._one(_SOURCE, user_id)
        if not row or not row["source"]:
            return None
        video = StoredVideo(**row["source"])
        return video if row["kept"] else attrs.evolve(video, source_key=None)

    async def language(self, user_id: UserId) -> str:
        row = await self._one("SELECT language FROM bot_users WHERE user_id = %s", user_id)
        return str(row["language"]) if row else "en"

    async def languages(self, user_ids: Sequence[int]) -> dict[int, str]:
        async with self._pool.connection() as conn:
            cur = await conn.execute(
                "SELECT user_id, language FROM bot_users WHERE user_id = ANY(%s)", [list(user_ids)]
            )
            rows = await cur.fetchall()
            await conn.commit()
        return {user_id: language for user_id, language in rows}

    async def open_orders(self, user_id: UserId) -> Sequence[OrderId]:
        """The user's orders that may still render or deliver (confirmed or running)."""
        async with self._pool.connection() as conn:
            cur = await conn.execute(
                "SELECT order_id FROM orders WHERE user_id = %s AND state IN ('confirmed', 'running') "
                "ORDER BY created_at",
                [user_id],
            )
            rows = await cur.fetchall()
            await conn.commit()
        return [OrderId(order_id) for (order_id,) in rows]

    async def block(self, user_id: UserId, now: datetime) -> None:
        """Telegram will not deliver to this user: remembered until they write again."""
        async with self._pool.connection() as conn, conn.transaction():
            await conn.execute(
                "INSERT INTO bot_users (user_id, language, created_at, blocked_at) VALUES (%s, 'en', %s, %s) "
                "ON CONFLICT (user_id) DO UPDATE SET blocked_at = EXCLUDED.blocked_at",
                [user_id, now, now],
            )

    async def blocked(self, user_ids: Sequence[UserId]) -> set[UserId]:
        async with self._pool.connection() as conn:
            cur = await conn.execute(
                "SELECT user_id FROM bot_users WHERE blocked_at IS NOT NULL AND user_id = ANY(%s)", [list(user_ids)]
            )
            rows = await cur.fetchall()
            await conn.commit()
        return {UserId(user_id) for (user_id,) in rows}

    async def orders_since(self, user_id: UserId, since: datetime) -> int:
        async with self._pool.connection() as conn:
            cur = await conn.execute(
                "SELECT count(*) FROM orders WHERE user_id = %s AND state <> 'quoted' AND created_at >= %s",
                [user_id, since],
            )
            (count,) = await cur.fetchone()  # type: ignore[misc]
            await conn.commit()
        return int(count)

    async def history(self, user_id: UserId, limit: int) -> Sequence[Mapping[str, Any]]:
        async with self._pool.connection() as conn:
            cur = conn.cursor(row_factory=dict_row)
            await cur.execute(
                "SELECT * FROM orders WHERE user_id = %s AND state <> 'quoted' ORDER BY created_at DESC LIMIT %s",
                [user_id, limit],
            )
            rows = await cur.fetchall()
            await conn.commit()
        orders = [order_from_row(row) for row in rows]
        return [
            {"created_at": o.created_at.isoformat(), "copies": o.quote.copies, "state": o.state.value,
             "charged": o.charged}
            for o in orders
        ]

    async def _one(self, query: str, user_id: UserId) -> dict[str, Any] | None:
        async with self._pool.connection() as conn:
            cur = conn.cursor(row_factory=dict_row)
            await cur.execute(query, [user_id])
            row = await cur.fetchone()
            await conn.commit()
        return row


def _events(rows: Sequence[Any]) -> list[tuple[int, str, Any, int, datetime]]:
    """(update_id, kind, payload, event_id, received_at) of inbox rows read as
    (id, update_id, kind, payload, received_at)."""
    return [(update, kind, payload, event_id, received) for event_id, update, kind, payload, received in rows]
