"""The bot's inbox and users in PostgreSQL.

Storing events inserts them (an update id seen before is skipped) and marks their users as
waiting in the same transaction. A processor leases a waiting user with SKIP LOCKED and a
time limit, so no transaction stays open while events are handled, and a dead processor's
users are taken over when the lease runs out. Each event is marked done in the transaction
that queues its replies. The statements, and why each is shaped so, are in sql/bot.sql.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from datetime import datetime, timedelta
from typing import Any

import attrs
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool

from videocopies.adapters.postgres.mappers import order_from_row
from videocopies.adapters.postgres.outbox import queued
from videocopies.adapters.postgres.queries import sql
from videocopies.adapters.postgres.unit_of_work import PostgresUnitOfWork
from videocopies.application.ports import BotUser, InboxEvent, OutboxMessage, StoredVideo
from videocopies.application.use_cases.joined import open_unit_of_work
from videocopies.domain.orders import CopyState
from videocopies.domain.shared import OrderId, UserId


class PostgresInbox:
    def __init__(
        self, pool: AsyncConnectionPool, fetch_timeout: timedelta = timedelta(minutes=10),
        uow: Callable[[], PostgresUnitOfWork] | None = None,
    ) -> None:
        self._pool = pool
        self._uow = uow or (lambda: PostgresUnitOfWork(pool))  # a turn's transaction
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
                cur = await conn.execute(sql("add_to_inbox"), {"now": now, "events": Jsonb(rows)})
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
            unreadable = Jsonb([{"update_id": u, "reason": r} for u, r in updates])
            cur = await conn.execute(sql("keep_unreadable"), {"now": now, "updates": unreadable})
            return cur.rowcount

    @asynccontextmanager
    async def turn(self) -> AsyncIterator[PostgresInboxTurn]:
        async with self._uow() as uow:
            yield PostgresInboxTurn(uow, self._fetch_timeout)

    async def complete_video(self, update_id: int, user_id: UserId, video: StoredVideo) -> bool:
        params = {"update_id": update_id, "user_id": user_id, "video": Jsonb(attrs.asdict(video))}
        async with self._pool.connection() as conn, conn.transaction():
            cur = await conn.execute(sql("complete_video"), params)
            row = await cur.fetchone()
        return bool(row and row[0])

    async def waiting_for_file(self, update_id: int, user_id: UserId) -> bool:
        async with self._pool.connection() as conn:
            cur = await conn.execute(sql("waiting_for_file"), {"update_id": update_id, "user_id": user_id})
            row = await cur.fetchone()
            await conn.commit()
        return row is not None

    async def fetching(self, limit: int) -> Sequence[InboxEvent]:
        async with self._pool.connection() as conn:
            cur = await conn.execute(sql("fetching_videos"), [limit])
            rows = await cur.fetchall()
            await conn.commit()
        return [InboxEvent.from_payload(*row) for row in _events(rows)]

    async def backlog(self) -> int:
        """Users waiting to be handled (for metrics)."""
        async with self._pool.connection() as conn:
            cur = await conn.execute(sql("inbox_backlog"))
            (count,) = await cur.fetchone()  # type: ignore[misc]
            await conn.commit()
        return int(count)


class PostgresInboxTurn:
    """The claim is the turn's first read; what it marks done and the users it lets go are sent
    with its COMMIT, in the unit of work's one round trip, and the replies of each event with
    the next statement (the next event's savepoint, or the COMMIT)."""

    def __init__(self, uow: PostgresUnitOfWork, fetch_timeout: timedelta) -> None:
        self.uow = uow
        self._fetch_timeout = fetch_timeout
        self._users: list[UserId] = []
        self._handled: list[tuple[InboxEvent, Sequence[OutboxMessage], str]] = []
        self._replies: list[OutboxMessage] = []  # not yet sent
        self._freed: list[UserId] = []  # taken back from a hold

    async def claim(
        self, now: datetime, limit: int, others: int, users: Sequence[UserId] | None = None
    ) -> Sequence[InboxEvent]:
        params = {"now": now, "limit": limit, "others": others, "fetch_deadline": now - self._fetch_timeout,
                  "only": None if users is None else list(users)}
        claimed = [UserId(row["user_id"]) for row in await self.uow.fetchall("claim_inbox_users", params)]
        self._users += claimed
        if users is not None:
            self._freed += claimed
        if not claimed:
            return []
        rows = await self.uow.fetchall("pending_inbox_events", [sorted(claimed)])
        return [
            InboxEvent.from_payload(r["update_id"], r["kind"], r["payload"], r["id"], r["received_at"]) for r in rows
        ]

    def hold(self, users: Sequence[UserId], until: datetime) -> None:
        if users:
            self.uow.at_commit.append(("hold_inbox_users", {"users": sorted(users), "until": until}))

    async def savepoint(self) -> None:
        await self.uow.savepoint(self._queued())

    async def undo(self) -> None:
        await self.uow.undo()

    def done(self, handled: Sequence[tuple[InboxEvent, Sequence[OutboxMessage], str]]) -> None:
        self._handled += handled
        self._replies += [reply for _, queued, _ in handled for reply in queued]

    def _queued(self) -> list[tuple[str, Any]]:
        """The replies of the events handled since the last look, as one statement: queued before
        the next event's use cases write theirs, so a user's messages keep the order of events."""
        replies, self._replies = self._replies, []
        if not replies:
            return []
        return [("queue_outbox", queued(replies))]

    async def commit(self) -> None:
        handled = self._handled
        self.uow.at_commit += self._queued()
        if handled:
            self.uow.at_commit.append(("mark_inbox_done", {
                "users": sorted({e.user.user_id for e, _, _ in handled}),
                "done": Jsonb([{"id": e.event_id, "outcome": o} for e, _, o in handled]),
                "ids": [e.event_id for e, _, _ in handled],
            }))
        if self._users:
            self.uow.at_commit.append(("forget_idle_inbox_users", [sorted(self._users)]))
        if self._freed:
            self.uow.at_commit.append(("free_inbox_users", [sorted(self._freed)]))
        await self.uow.commit()
        self._users, self._handled, self._freed = [], [], []


class PostgresBotUsers:
    """What the conversation asks runs in the inbox turn's transaction when one is open (see
    application/use_cases/joined.py), else in a transaction of its own."""

    def __init__(self, pool: AsyncConnectionPool) -> None:
        self._pool = pool

    async def _rows(self, name: str, params: Sequence[Any]) -> list[dict[str, Any]]:
        joined = open_unit_of_work()
        if isinstance(joined, PostgresUnitOfWork):
            return await joined.fetchall(name, params)
        async with self._pool.connection() as conn, conn.transaction():
            cur = conn.cursor(row_factory=dict_row)
            await cur.execute(sql(name), params)
            return await cur.fetchall() if cur.description else []

    async def remember(self, user: BotUser, now: datetime) -> bool:
        (row,) = await self._rows("remember_bot_user", [user.user_id, user.language, user.first_name, now])
        return bool(row["inserted"])

    async def remember_many(self, users: Sequence[BotUser], now: datetime) -> set[UserId]:
        latest = sorted({user.user_id: user for user in users}.values(), key=lambda u: u.user_id)
        rows = await self._rows("remember_bot_users", [now, Jsonb([
            {"user_id": u.user_id, "language": u.language, "first_name": u.first_name} for u in latest
        ])])
        return {UserId(row["user_id"]) for row in rows if row["inserted"]}

    async def set_source(self, user_id: UserId, video: StoredVideo | None) -> None:
        await self._rows("set_user_source", [Jsonb(attrs.asdict(video)) if video else None, user_id])

    async def source(self, user_id: UserId) -> StoredVideo | None:
        """The user's waiting video; its `source_key` is None once the store no longer keeps
        the file (the object lifecycle deleted it, or decided to: see migration 0021)."""
        rows = await self._rows("user_source", [user_id])
        if not rows or not rows[0]["source"]:
            return None
        video = StoredVideo(**rows[0]["source"])
        return video if rows[0]["kept"] else attrs.evolve(video, source_key=None)

    async def kept_copy(self, key: str) -> bool:
        return bool(await self._rows("kept_copy", [key]))

    async def kept_source(self, user_id: UserId, key: str) -> int | None:
        rows = await self._rows("kept_source", [key, user_id])
        return int(rows[0]["size"] or 0) if rows else None

    async def language(self, user_id: UserId) -> str:
        rows = await self._rows("user_language", [user_id])
        return str(rows[0]["language"]) if rows else "en"

    async def choose_language(self, user_id: UserId, language: str) -> None:
        await self._rows("choose_user_language", [language, user_id])

    async def languages(self, user_ids: Sequence[int]) -> dict[int, str]:
        async with self._pool.connection() as conn:
            cur = await conn.execute(sql("user_languages"), [list(user_ids)])
            rows = await cur.fetchall()
            await conn.commit()
        return {user_id: language for user_id, language in rows}

    async def open_orders(self, user_id: UserId) -> Sequence[OrderId]:
        """The user's orders that may still render or deliver (confirmed or running)."""
        async with self._pool.connection() as conn:
            cur = await conn.execute(
                sql("user_open_orders"),
                [user_id],
            )
            rows = await cur.fetchall()
            await conn.commit()
        return [OrderId(order_id) for (order_id,) in rows]

    async def block(self, user_id: UserId, now: datetime) -> None:
        """Telegram will not deliver to this user: remembered until they write again."""
        async with self._pool.connection() as conn, conn.transaction():
            await conn.execute(
                sql("block_user"),
                [user_id, now, now],
            )

    async def blocked(self, user_ids: Sequence[UserId]) -> set[UserId]:
        async with self._pool.connection() as conn:
            cur = await conn.execute(sql("blocked_users"), [list(user_ids)])
            rows = await cur.fetchall()
            await conn.commit()
        return {UserId(user_id) for (user_id,) in rows}

    async def orders_since(self, user_id: UserId, since: datetime) -> int:
        (row,) = await self._rows("user_orders_since", [user_id, since])
        return int(row["count"])

    async def history(self, user_id: UserId, limit: int) -> Sequence[Mapping[str, Any]]:
        orders = [order_from_row(row) for row in await self._rows("user_history", [user_id, limit])]
        return [
            {"created_at": o.created_at.isoformat(), "copies": o.quote.copies, "state": o.state.value,
             "charged": o.charged, "order_id": o.order_id,
             "delivered": [c.index for c in o.copies if c.state is CopyState.DELIVERED]}
            for o in orders
        ]


def _events(rows: Sequence[Any]) -> list[tuple[int, str, Any, int, datetime]]:
    """(update_id, kind, payload, event_id, received_at) of inbox rows read as
    (id, update_id, kind, payload, received_at)."""
    return [(update, kind, payload, event_id, received) for event_id, update, kind, payload, received in rows]
