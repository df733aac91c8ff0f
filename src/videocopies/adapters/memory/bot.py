"""The bot's inbox and users in memory, with the same promises as the PostgreSQL adapter."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

import attrs

from videocopies.adapters.memory.unit_of_work import InMemoryStore
from videocopies.application.bot.events import BotUser, InboxEvent, StoredVideo
from videocopies.application.ports import OutboxMessage
from videocopies.domain.orders import OrderState
from videocopies.domain.shared import UserId


class InMemoryInbox:
    def __init__(self, store: InMemoryStore) -> None:
        self._store = store
        self.events: dict[int, InboxEvent] = {}  # by update id
        self.processed: dict[int, str] = {}  # update id -> outcome
        self._leases: dict[UserId, datetime] = {}
        self._ids = 0

    async def add(self, events: Sequence[InboxEvent], now: datetime) -> int:
        new = 0
        for event in events:
            if event.update_id not in self.events:
                self._ids += 1
                self.events[event.update_id] = attrs.evolve(event, event_id=self._ids)
                new += 1
        return new

    async def lease_users(self, now: datetime, seconds: float, limit: int) -> Sequence[UserId]:
        waiting = sorted(
            (e.event_id or 0, e.user.user_id) for e in self.events.values() if e.update_id not in self.processed
        )
        leased: list[UserId] = []
        for _, user_id in waiting:
            until = self._leases.get(user_id)
            if user_id not in leased and (until is None or until <= now) and len(leased) < limit:
                self._leases[user_id] = now + timedelta(seconds=seconds)
                leased.append(user_id)
        return leased

    async def pending(self, user_ids: Sequence[UserId]) -> Sequence[InboxEvent]:
        wanted = set(user_ids)
        return sorted(
            (e for e in self.events.values() if e.user.user_id in wanted and e.update_id not in self.processed),
            key=lambda e: e.event_id or 0,
        )

    async def done(self, event: InboxEvent, replies: Sequence[OutboxMessage], outcome: str) -> None:
        known = {m.dedup_key for m in self._store.outbox.values()}
        for message in replies:
            if message.dedup_key not in known:
                self._store.outbox[next(self._store._outbox_ids)] = message
        self.processed[event.update_id] = outcome

    async def done_many(self, handled: Sequence[tuple[InboxEvent, Sequence[OutboxMessage], str]]) -> None:
        for event, replies, outcome in handled:
            await self.done(event, replies, outcome)

    async def release(self, user_ids: Sequence[UserId]) -> None:
        for user_id in user_ids:
            self._leases.pop(user_id, None)


class InMemoryBotUsers:
    def __init__(self, store: InMemoryStore) -> None:
        self._store = store
        self.users: dict[UserId, BotUser] = {}
        self.sources: dict[UserId, StoredVideo] = {}

    async def remember(self, user: BotUser, now: datetime) -> bool:
        first = user.user_id not in self.users
        self.users[user.user_id] = user
        return first

    async def remember_many(self, users: Sequence[BotUser], now: datetime) -> set[UserId]:
        return {user.user_id for user in users if await self.remember(user, now)}

    async def set_source(self, user_id: UserId, video: StoredVideo | None) -> None:
        if video is None:
            self.sources.pop(user_id, None)
        else:
            self.sources[user_id] = video

    async def source(self, user_id: UserId) -> StoredVideo | None:
        return self.sources.get(user_id)

    async def language(self, user_id: UserId) -> str:
        user = self.users.get(user_id)
        return user.language if user else "en"

    async def orders_since(self, user_id: UserId, since: datetime) -> int:
        return sum(
            1 for o in self._store.orders.values()
            if o.user_id == user_id and o.state is not OrderState.QUOTED and o.created_at >= since
        )

    async def history(self, user_id: UserId, limit: int) -> Sequence[Mapping[str, Any]]:
        orders = [o for o in self._store.orders.values() if o.user_id == user_id and o.state is not OrderState.QUOTED]
        orders.sort(key=lambda o: o.created_at, reverse=True)
        return [
            {"created_at": o.created_at.isoformat(), "copies": o.quote.copies, "state": o.state.value,
             "charged": o.charged}
            for o in orders[:limit]
        ]
