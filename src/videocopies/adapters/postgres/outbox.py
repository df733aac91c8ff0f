"""The outbox as edge takes it: messages held by one sender at a time, oldest first.

A claimed message is held until `claimed_until`; a sender that dies lets it go to the next
one. One user's messages are handed out in order: a message is not claimable while an
earlier one of the same user is still unsent, so a quote never overtakes the video it
answers, and copy 2 never arrives before copy 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

import attrs
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool

from videocopies.adapters.postgres.peek import glance

# The claimed rows are updated by primary key (`= ANY`): joined to the CTE, the planner hashed
# the whole table for each batch. Reports below name their rows the same way, which helps
# once the table has statistics (see _MARK_DONE in bot.py).
_CLAIM = """
WITH next AS (
    SELECT o.id FROM outbox o
     WHERE o.sent_at IS NULL AND (o.claimed_until IS NULL OR o.claimed_until <= %(now)s)
       AND NOT EXISTS (SELECT 1 FROM outbox e WHERE e.user_id = o.user_id AND e.sent_at IS NULL AND e.id < o.id
                        AND e.claimed_until > %(now)s)
     ORDER BY o.id LIMIT %(limit)s FOR UPDATE SKIP LOCKED
)
UPDATE outbox SET claimed_until = %(until)s, attempts = attempts + 1
 WHERE outbox.id = ANY(ARRAY(SELECT id FROM next))
RETURNING outbox.id, outbox.user_id, outbox.kind, outbox.payload, outbox.attempts
"""
_ANY = """
SELECT EXISTS (SELECT 1 FROM outbox WHERE sent_at IS NULL AND (claimed_until IS NULL OR claimed_until <= now()))
"""


@attrs.frozen
class ClaimedMessage:
    message_id: int
    user_id: int
    kind: str
    payload: dict[str, Any]
    attempts: int


class PostgresOutboxQueue:
    def __init__(self, pool: AsyncConnectionPool) -> None:
        self._pool = pool

    async def claim(self, now: datetime, limit: int, hold_s: float = 60.0) -> Sequence[ClaimedMessage]:
        params = {"now": now, "limit": limit, "until": now + timedelta(seconds=hold_s)}
        async with self._pool.connection() as conn, conn.transaction():
            cur = conn.cursor(row_factory=dict_row)
            await cur.execute(_CLAIM, params)
            rows = await cur.fetchall()
        return sorted(
            (ClaimedMessage(r["id"], r["user_id"], r["kind"], r["payload"], r["attempts"]) for r in rows),
            key=lambda m: m.message_id,
        )

    async def get(self, message_id: int) -> ClaimedMessage | None:
        async with self._pool.connection() as conn:
            cur = conn.cursor(row_factory=dict_row)
            await cur.execute("SELECT id, user_id, kind, payload, attempts FROM outbox WHERE id = %s", [message_id])
            row = await cur.fetchone()
            await conn.commit()
        return ClaimedMessage(row["id"], row["user_id"], row["kind"], row["payload"], row["attempts"]) if row else None

    async def copies_among(self, message_ids: Sequence[int]) -> list[ClaimedMessage]:
        """The `copy_ready` messages among these: the ones a delivery report charges for. A
        batch of reports is mostly screens, whose rows need not be read at all."""
        async with self._pool.connection() as conn:
            cur = conn.cursor(row_factory=dict_row)
            await cur.execute(
                "SELECT id, user_id, kind, payload, attempts FROM outbox"
                " WHERE id = ANY(%s) AND kind = 'copy_ready' ORDER BY id",
                [list(message_ids)],
            )
            rows = await cur.fetchall()
            await conn.commit()
        return [ClaimedMessage(r["id"], r["user_id"], r["kind"], r["payload"], r["attempts"]) for r in rows]

    async def sent_many(self, deliveries: Sequence[tuple[int, dict[str, Any]]]) -> int:
        """Mark many sent in one statement; returns how many were not already."""
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

    async def retry_later(self, message_id: int, not_before: datetime) -> None:
        async with self._pool.connection() as conn, conn.transaction():
            await conn.execute(
                "UPDATE outbox SET claimed_until = %s WHERE id = %s AND sent_at IS NULL", [not_before, message_id]
            )

    async def anything(self) -> bool:
        return await glance(self._pool, _ANY)
