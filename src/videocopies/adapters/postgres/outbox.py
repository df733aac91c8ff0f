"""The outbox as edge takes it: messages held by one sender at a time, replies before copies.

A claimed message is held until `claimed_until`; a sender that dies lets it go to the next
one. One user's messages are handed out in order: a message is not claimable while an
earlier one of the same user is still held, and a claim takes a user's messages oldest
first, so a quote never overtakes the video it answers, and copy 2 never arrives before
copy 1. Replies to what users just did (every kind but `copy_ready`) go first; copies
follow with users taking turns (each user's first unsent message, then each one's second,
...), so one user's ten copies never hold up another user's welcome. A claim takes at most
`per_user` messages of one user: a chat Telegram paces at about one message a second must
not keep a whole batch waiting.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from psycopg.rows import dict_row
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool

from videocopies.adapters.postgres.peek import glance
from videocopies.application.ports import OutboxMessage
from videocopies.application.use_cases.undeliverable import QueuedMessage, in_turns

# Replies walk the index of unsent replies in id order and stop at the limit; a reply behind
# an unsent copy of its user waits for it (it is taken among the copies, in its turn). Copies
# are looked for only when replies leave room (LIMIT 0 runs nothing): the users with unsent
# copies are found by skipping through their index, one step per user, and each one's first
# `per_user` unsent messages give the turns. Measured on 10,000 unsent rows (EXPLAIN ANALYZE,
# prepared): 100 welcomes ahead of 1,000 copies of 100 users, 1-3 ms; 200 of 10,000 copies of
# 1,000 users, 17 ms (one step per user, about 15 us each).
# The claimed rows are updated by primary key (`= ANY`): joined to the CTE, the planner hashed
# the whole table for each batch. Reports below name their rows the same way, which helps
# once the table has statistics (see _MARK_DONE in bot.py).
_CLAIM = """
WITH RECURSIVE replies AS (
    SELECT o.id FROM outbox o
     WHERE o.sent_at IS NULL AND o.kind <> 'copy_ready'
       AND (o.claimed_until IS NULL OR o.claimed_until <= %(now)s)
       AND (SELECT count(*) < %(per_user)s
                   AND NOT coalesce(bool_or(e.kind = 'copy_ready' OR e.claimed_until > %(now)s), false)
              FROM outbox e WHERE e.user_id = o.user_id AND e.sent_at IS NULL AND e.id < o.id)
     ORDER BY o.id LIMIT %(limit)s
       FOR UPDATE OF o SKIP LOCKED
), waiting AS (
    (SELECT c.user_id FROM outbox c WHERE c.sent_at IS NULL AND c.kind = 'copy_ready' ORDER BY c.user_id LIMIT 1)
    UNION ALL
    SELECT (SELECT c.user_id FROM outbox c
             WHERE c.sent_at IS NULL AND c.kind = 'copy_ready' AND c.user_id > w.user_id
             ORDER BY c.user_id LIMIT 1)
      FROM waiting w WHERE w.user_id IS NOT NULL
), turns AS (
    SELECT t.id FROM waiting w CROSS JOIN LATERAL (
        SELECT f.id, f.turn FROM (
            SELECT o.id, o.claimed_until, row_number() OVER mine AS turn,
                   bool_or(o.kind = 'copy_ready') OVER mine AS behind_copy,
                   bool_or(o.claimed_until > %(now)s) OVER (mine ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
                       AS behind_held
              FROM (SELECT e.id, e.kind, e.claimed_until FROM outbox e
                     WHERE e.user_id = w.user_id AND e.sent_at IS NULL ORDER BY e.id LIMIT %(per_user)s) o
            WINDOW mine AS (ORDER BY o.id)
        ) f
         WHERE f.behind_copy AND NOT coalesce(f.behind_held, false)
           AND (f.claimed_until IS NULL OR f.claimed_until <= %(now)s)
    ) t
     WHERE w.user_id IS NOT NULL
     ORDER BY t.turn, t.id
     LIMIT %(limit)s - (SELECT count(*) FROM replies)
), copies AS (
    SELECT o.id FROM outbox o
     WHERE o.id = ANY(ARRAY(SELECT id FROM turns)) AND o.sent_at IS NULL
       AND (o.claimed_until IS NULL OR o.claimed_until <= %(now)s)
       FOR UPDATE SKIP LOCKED
)
UPDATE outbox SET claimed_until = %(until)s, attempts = attempts + 1
 WHERE outbox.id = ANY(ARRAY(SELECT id FROM replies UNION ALL SELECT id FROM copies))
RETURNING outbox.id, outbox.user_id, outbox.kind, outbox.payload, outbox.attempts,
          EXISTS (SELECT 1 FROM bot_users b WHERE b.user_id = outbox.user_id AND b.blocked_at IS NOT NULL)
              AS blocked
"""
_QUEUE = """
INSERT INTO outbox (user_id, kind, payload, dedup_key, created_at)
SELECT (r.e->>'user_id')::bigint, r.e->>'kind', r.e->'payload', r.e->>'dedup_key', now()
  FROM jsonb_array_elements(%s::jsonb) WITH ORDINALITY AS r(e, n)
 ORDER BY r.n
ON CONFLICT (dedup_key) DO NOTHING
"""
_COLUMNS = "id, user_id, kind, payload, attempts"
_ANY = """
SELECT EXISTS (SELECT 1 FROM outbox WHERE sent_at IS NULL AND (claimed_until IS NULL OR claimed_until <= now()))
"""


ClaimedMessage = QueuedMessage  # the name edge_api and older callers know


def _message(row: dict[str, Any]) -> QueuedMessage:
    return QueuedMessage(
        row["id"], row["user_id"], row["kind"], row["payload"], row["attempts"], bool(row.get("blocked"))
    )


class PostgresOutboxQueue:
    def __init__(self, pool: AsyncConnectionPool) -> None:
        self._pool = pool

    async def claim(
        self, now: datetime, limit: int, hold_s: float = 60.0, per_user: int = 3
    ) -> Sequence[QueuedMessage]:
        """Up to `limit` messages to send, held for `hold_s`, in the order to send them."""
        params = {"now": now, "limit": limit, "until": now + timedelta(seconds=hold_s), "per_user": per_user}
        async with self._pool.connection() as conn, conn.transaction():
            cur = conn.cursor(row_factory=dict_row)
            await cur.execute(_CLAIM, params)
            rows = await cur.fetchall()
        return in_turns([_message(r) for r in rows])

    async def get(self, message_id: int) -> QueuedMessage | None:
        found = await self._read(f"SELECT {_COLUMNS} FROM outbox WHERE id = %s", [message_id])
        return found[0] if found else None

    async def among(self, message_ids: Sequence[int], kind: str | None = None) -> list[QueuedMessage]:
        """These messages (only those of `kind`, when given), by id."""
        if kind is None:
            return await self._read(f"SELECT {_COLUMNS} FROM outbox WHERE id = ANY(%s) ORDER BY id",
                                    [list(message_ids)])
        return await self._read(f"SELECT {_COLUMNS} FROM outbox WHERE id = ANY(%s) AND kind = %s ORDER BY id",
                                [list(message_ids), kind])

    async def copies_among(self, message_ids: Sequence[int]) -> list[QueuedMessage]:
        """The `copy_ready` messages among these: the ones a delivery report charges for. A
        batch of reports is mostly screens, whose rows need not be read at all."""
        return await self.among(message_ids, "copy_ready")

    async def unsent_of(self, user_id: int) -> list[QueuedMessage]:
        """Every message of this user not yet sent (or given up), oldest first."""
        return await self._read(
            f"SELECT {_COLUMNS} FROM outbox WHERE user_id = %s AND sent_at IS NULL ORDER BY id", [user_id]
        )

    async def queue(self, messages: Sequence[OutboxMessage]) -> None:
        """Write messages (a dedup key seen before is skipped), in this order."""
        if not messages:
            return
        async with self._pool.connection() as conn, conn.transaction():
            await conn.execute(_QUEUE, [Jsonb([
                {"user_id": m.user_id, "kind": m.kind, "payload": m.payload, "dedup_key": m.dedup_key}
                for m in messages
            ])])

    async def _read(self, query: str, params: list[Any]) -> list[QueuedMessage]:
        async with self._pool.connection() as conn:
            cur = conn.cursor(row_factory=dict_row)
            await cur.execute(query, params)
            rows = await cur.fetchall()
            await conn.commit()
        return [_message(r) for r in rows]

    async def sent_many(self, deliveries: Sequence[tuple[int, dict[str, Any]]]) -> int:
        """Mark many sent (or given up, with an `error`) in one statement; returns how many
        were not already."""
        async with self._pool.connection() as conn, conn.transaction():
            cur = await conn.execute(
                "UPDATE outbox SET sent_at = now(), delivery = d.delivery, claimed_until = NULL "
                "FROM jsonb_to_recordset(%s::jsonb) AS d(id bigint, delivery jsonb) "
                "WHERE outbox.id = d.id AND outbox.id = ANY(%s::bigint[]) AND outbox.sent_at IS NULL",
                [Jsonb([{"id": i, "delivery": d} for i, d in deliveries]), [i for i, _ in deliveries]],
            )
            return cur.rowcount

    async def sent(self, message_id: int, delivery: dict[str, Any]) -> bool:
        """Mark sent; False when it already was (a retried report)."""
        async with self._pool.connection() as conn, conn.transaction():
            cur = await conn.execute(
                "UPDATE outbox SET sent_at = now(), delivery = %s, claimed_until = NULL "
                "WHERE id = %s AND sent_at IS NULL",
                [Jsonb(delivery), message_id],
            )
            return bool(cur.rowcount)

    async def give_up(self, deliveries: Sequence[tuple[int, dict[str, Any]]]) -> int:
        """Close messages that will never be sent; `sent_many` by another name."""
        return await self.sent_many(deliveries)

    async def retry_later(self, message_id: int, not_before: datetime) -> None:
        async with self._pool.connection() as conn, conn.transaction():
            await conn.execute(
                "UPDATE outbox SET claimed_until = %s WHERE id = %s AND sent_at IS NULL", [not_before, message_id]
            )

    async def anything(self) -> bool:
        return await glance(self._pool, _ANY)
