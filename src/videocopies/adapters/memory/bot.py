"""The bot's inbox and users in memory, with the same promises as the PostgreSQL adapters
(the outbox queue edge takes is in outbox.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from datetime import datetime, timedelta
from typing import Any

import attrs

from videocopies.adapters.memory.outbox import InMemoryOutboxQueue, blocked_users
from videocopies.adapters.memory.unit_of_work import InMemoryStore, InMemoryUnitOfWork
from videocopies.application.ports import UNREADABLE, BotUser, InboxEvent, OutboxMessage, StoredVideo
from videocopies.domain.orders import CopyState, OrderState
from videocopies.domain.shared import OrderId, UserId


class InMemoryInbox:
    def __init__(self, store: InMemoryStore) -> None:
        self._store = store
        self.events: dict[int, InboxEvent] = {}  # by update id
        self.processed: dict[int, str] = {}  # update id -> outcome
        self._held: set[UserId] = set()  # claimed by an open turn
        self.leases: dict[UserId, datetime] = {}  # held past a turn (see InboxTurn.hold)
        self._ids = 0
        self.fetch_timeout = timedelta(minutes=10)

    async def add(self, events: Sequence[InboxEvent], now: datetime) -> int:
        new = 0
        for event in events:
            if event.update_id not in self.events:
                self._ids += 1
                self.events[event.update_id] = attrs.evolve(event, event_id=self._ids, received_at=now)
                new += 1
        return new

    async def keep_unreadable(self, updates: Sequence[tuple[int, str]], now: datetime) -> int:
        new = 0
        for update_id, reason in updates:
            if update_id not in self.events:
                self._ids += 1
                nobody = BotUser(UserId(0), "en")
                self.events[update_id] = InboxEvent(update_id, nobody, UNREADABLE, event_id=self._ids, reason=reason)
                self.processed[update_id] = UNREADABLE
                new += 1
        return new

    @asynccontextmanager
    async def turn(self) -> AsyncIterator[InMemoryInboxTurn]:
        async with InMemoryUnitOfWork(self._store) as uow:
            turn = InMemoryInboxTurn(self, uow)
            try:
                yield turn
            finally:
                self._held -= set(turn.users)

    def claim(
        self, now: datetime, limit: int, others: int, users: Sequence[UserId] | None
    ) -> tuple[list[UserId], list[InboxEvent]]:
        by_user: dict[UserId, list[InboxEvent]] = {}
        for event in sorted(self.events.values(), key=lambda e: e.event_id or 0):
            if event.update_id not in self.processed:
                by_user.setdefault(event.user.user_id, []).append(event)
        claimed: list[UserId] = []
        counts = {True: 0, False: 0}  # users with only text waiting, the others
        for user_id, events in by_user.items():
            head, texts = events[0], all(e.kind == "text" for e in events)
            leased = users is None and self.leases.get(user_id, now) > now
            if (user_id in self._held or leased or (users is not None and user_id not in users)
                    or (head.waits_for_file and (head.received_at or now) > now - self.fetch_timeout)):
                continue  # held by another turn or a lease, not asked for, or its file is not there yet
            if counts[texts] < (limit if texts else others):
                counts[texts] += 1
                claimed.append(user_id)
        self._held |= set(claimed)
        return claimed, [e for u in claimed for e in by_user[u]]

    def reply(self, replies: Sequence[OutboxMessage]) -> None:
        known = {m.dedup_key for m in self._store.outbox.values()}
        for message in replies:
            if message.dedup_key not in known:
                self._store.outbox[next(self._store._outbox_ids)] = message

    def done(self, event: InboxEvent, outcome: str) -> None:
        self.processed[event.update_id] = outcome
        blocked = blocked_users(self._store)
        since = blocked.get(event.user.user_id)
        stored = self.events.get(event.update_id)
        received = stored.received_at if stored is not None else None
        if since is not None and (received is None or since <= received):
            del blocked[event.user.user_id]  # they wrote again since they were found blocked

    async def complete_video(self, update_id: int, user_id: UserId, video: StoredVideo) -> bool:
        event = self.events.get(update_id)
        if (event is None or event.user.user_id != user_id or update_id in self.processed
                or not event.waits_for_file):
            return False
        self.events[update_id] = attrs.evolve(event, video=video)
        return True

    async def waiting_for_file(self, update_id: int, user_id: UserId) -> bool:
        event = self.events.get(update_id)
        return (event is not None and event.user.user_id == user_id and update_id not in self.processed
                and event.waits_for_file)

    async def fetching(self, limit: int) -> Sequence[InboxEvent]:
        waiting = [e for e in self.events.values() if e.update_id not in self.processed and e.waits_for_file]
        return sorted(waiting, key=lambda e: e.event_id or 0)[:limit]


class InMemoryInboxTurn:
    """The claimed users are held until the turn ends; what it marks done is written at commit."""

    def __init__(self, inbox: InMemoryInbox, uow: InMemoryUnitOfWork) -> None:
        self._inbox, self.uow = inbox, uow
        self.users: list[UserId] = []
        self._handled: list[tuple[InboxEvent, Sequence[OutboxMessage], str]] = []
        self._leases: dict[UserId, datetime | None] = {}  # set (or freed: None) at commit

    async def claim(
        self, now: datetime, limit: int, others: int, users: Sequence[UserId] | None = None
    ) -> Sequence[InboxEvent]:
        claimed, events = self._inbox.claim(now, limit, others, users)
        self.users += claimed
        self._leases.update((user_id, None) for user_id in claimed if users is not None)
        return events

    def hold(self, users: Sequence[UserId], until: datetime) -> None:
        self._leases.update((user_id, until) for user_id in users)

    async def savepoint(self) -> None:
        await self.uow.savepoint()

    async def undo(self) -> None:
        await self.uow.undo()

    def done(self, handled: Sequence[tuple[InboxEvent, Sequence[OutboxMessage], str]]) -> None:
        self._handled += handled
        for _, replies, _ in handled:  # at once, as the use cases' own messages are (see the session)
            self._inbox.reply(replies)

    async def commit(self) -> None:
        for event, _, outcome in self._handled:
            self._inbox.done(event, outcome)
        for user_id, until in self._leases.items():
            if until is None:
                self._inbox.leases.pop(user_id, None)
            else:
                self._inbox.leases[user_id] = until
        self._handled, self._leases = [], {}
        await self.uow.commit()


class InMemoryBotUsers:
    def __init__(self, store: InMemoryStore) -> None:
        self._store = store
        self.users: dict[UserId, BotUser] = {}
        self.sources: dict[UserId, StoredVideo] = {}
        self.sent: dict[tuple[UserId, str], StoredVideo] = {}  # every kept video, by its key
        self.chosen_languages: dict[UserId, str] = {}

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
            if video.source_key:
                self.sent[(user_id, video.source_key)] = video

    async def source(self, user_id: UserId) -> StoredVideo | None:
        return self.sources.get(user_id)

    async def kept_copy(self, key: str) -> bool:
        return True  # nothing deletes copies here

    async def kept_source(self, user_id: UserId, key: str) -> int | None:
        video = self.sent.get((user_id, key))
        return video.size if video is not None else None

    async def language(self, user_id: UserId) -> str:
        user = self.users.get(user_id)
        return self.chosen_languages.get(user_id) or (user.language if user else "en")

    async def choose_language(self, user_id: UserId, language: str) -> None:
        if user_id in self.users:
            self.chosen_languages[user_id] = language

    async def open_orders(self, user_id: UserId) -> Sequence[OrderId]:
        return [
            o.order_id for o in sorted(self._store.orders.values(), key=lambda o: o.created_at)
            if o.user_id == user_id and o.state in (OrderState.CONFIRMED, OrderState.RUNNING)
        ]

    async def block(self, user_id: UserId, now: datetime) -> None:
        blocked_users(self._store)[user_id] = now

    async def blocked(self, user_ids: Sequence[UserId]) -> set[UserId]:
        return set(user_ids) & set(blocked_users(self._store))

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
             "charged": o.charged, "order_id": o.order_id,
             "delivered": [c.index for c in o.copies if c.state is CopyState.DELIVERED]}
            for o in orders[:limit]
        ]


__all__ = ["InMemoryBotUsers", "InMemoryInbox", "InMemoryInboxTurn", "InMemoryOutboxQueue"]
