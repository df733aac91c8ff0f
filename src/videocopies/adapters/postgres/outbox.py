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

from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any

from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool

from videocopies.adapters.postgres.peek import glance, glance_at
from videocopies.adapters.postgres.pool import fetch_rows
from videocopies.adapters.postgres.queries import sql
from videocopies.application.ports import OutboxMessage, QueuedMessage
from videocopies.application.use_cases.announcements import progress_key
from videocopies.application.use_cases.undeliverable import in_turns

ClaimedMessage = QueuedMessage  # the name edge_api and older callers know


def _message(row: dict[str, Any]) -> QueuedMessage:
    return QueuedMessage(
        row["id"], row["user_id"], row["kind"], row["payload"], row["attempts"], bool(row.get("blocked"))
    )



def queued(messages: Sequence[OutboxMessage]) -> list[Any]:
    """The parameters of `queue_outbox`: the messages, in order, as one JSON document."""
    return [Jsonb([
        {"user_id": m.user_id, "kind": m.kind, "payload": m.payload, "dedup_key": m.dedup_key} for m in messages
    ])]

class PostgresOutboxQueue:
    def __init__(self, pool: AsyncConnectionPool) -> None:
        self._pool = pool
        # Told when a message recorded sent has buttons that lapse (core's sweep wakes then).
        self.lapsing_noticed: Callable[[datetime], None] | None = None

    async def claim(
        self, now: datetime, limit: int, hold_s: float = 60.0, per_user: int = 3
    ) -> Sequence[QueuedMessage]:
        """Up to `limit` messages to send, held for `hold_s`, in the order to send them."""
        params = {"now": now, "limit": limit, "until": now + timedelta(seconds=hold_s), "per_user": per_user}
        return in_turns([_message(r) for r in await fetch_rows(self._pool, sql("claim_outbox"), params)])

    async def get(self, message_id: int) -> QueuedMessage | None:
        found = await self._read(sql("outbox_message"), [message_id])
        return found[0] if found else None

    async def among(self, message_ids: Sequence[int], kind: str | None = None) -> list[QueuedMessage]:
        """These messages (only those of `kind`, when given), by id."""
        if kind is None:
            return await self._read(sql("outbox_messages"), [list(message_ids)])
        return await self._read(sql("outbox_messages_of_kind"), [list(message_ids), kind])

    async def copies_among(self, message_ids: Sequence[int]) -> list[QueuedMessage]:
        """The `copy_ready` messages among these: the ones a delivery report charges for. A
        batch of reports is mostly screens, whose rows need not be read at all."""
        return await self.among(message_ids, "copy_ready")

    async def unsent_of(self, user_id: int) -> list[QueuedMessage]:
        """Every message of this user not yet sent (or given up), oldest first."""
        return await self._read(sql("unsent_of_user"), [user_id])

    async def queue(self, messages: Sequence[OutboxMessage]) -> None:
        """Write messages (a dedup key seen before is skipped), in this order."""
        if not messages:
            return
        async with self._pool.connection() as conn, conn.transaction():
            await conn.execute(sql("queue_outbox"), queued(messages))

    async def _read(self, query: str, params: list[Any]) -> list[QueuedMessage]:
        return [_message(r) for r in await fetch_rows(self._pool, query, params)]

    async def sent_many(self, deliveries: Sequence[tuple[int, dict[str, Any]]]) -> int:
        """Mark many sent (or given up, with an `error`) in one statement; returns how many
        were not already."""
        rows = await fetch_rows(
            self._pool, sql("outbox_sent_many"),
            [Jsonb([{"id": i, "delivery": d} for i, d in deliveries]), [i for i, _ in deliveries]],
        )
        if rows[0]["lapses"] is not None and self.lapsing_noticed is not None:
            self.lapsing_noticed(rows[0]["lapses"])
        return int(rows[0]["recorded"])

    async def lapse_buttons(self, now: datetime, limit: int = 100) -> int:
        """Queue an `unbutton` message for each sent message whose buttons lapsed by `now` (at
        most `limit`); how many were."""
        rows = await fetch_rows(self._pool, sql("lapse_buttons"), {"now": now, "limit": limit})
        return int(rows[0]["lapsed"])

    async def next_lapse(self) -> datetime | None:
        """When the next sent message's buttons lapse; None when no message is waiting to."""
        due: datetime | None = await glance_at(self._pool, sql("next_lapse"))  # one statement, no transaction
        return due

    async def sent(self, message_id: int, delivery: dict[str, Any]) -> bool:
        """Mark sent; False when it already was (a retried report)."""
        async with self._pool.connection() as conn, conn.transaction():
            cur = await conn.execute(
                sql("outbox_sent"),
                [Jsonb(delivery), message_id],
            )
            return bool(cur.rowcount)

    async def give_up(self, deliveries: Sequence[tuple[int, dict[str, Any]]]) -> int:
        """Close messages that will never be sent; `sent_many` by another name."""
        return await self.sent_many(deliveries)

    async def retry_later(self, message_id: int, not_before: datetime) -> None:
        async with self._pool.connection() as conn, conn.transaction():
            await conn.execute(sql("outbox_retry_later"), [not_before, message_id])

    async def anything(self) -> bool:
        return await glance(self._pool, sql("glance_outbox"))

    async def progress_messages(self, order_ids: Sequence[str]) -> dict[str, int]:
        """The Telegram message id of each order's progress message, where one was sent."""
        keys = {progress_key(o): o for o in order_ids}
        rows = await fetch_rows(self._pool, sql("progress_messages"), [list(keys)])
        return {keys[r["dedup_key"]]: int(r["message_id"]) for r in rows if r["message_id"] is not None}

    async def progress_moved(self, order_id: str, message_id: int) -> None:
        """The order's progress message is now `message_id` (the old one could not be edited)."""
        async with self._pool.connection() as conn, conn.transaction():
            await conn.execute(sql("outbox_progress_moved"), [message_id, progress_key(order_id)])
