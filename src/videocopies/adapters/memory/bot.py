"""The bot's inbox, users and outbox queue in memory, with the same promises as the
PostgreSQL adapters."""

from __future__ import annotations

import weakref
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from datetime import datetime, timedelta
from typing import Any

import attrs

from videocopies.adapters.memory.unit_of_work import InMemoryStore, InMemoryUnitOfWork
from videocopies.application.ports import UNREADABLE, BotUser, InboxEvent, OutboxMessage, QueuedMessage, StoredVideo
from videocopies.application.use_cases.undeliverable import COPY, in_turns
from videocopies.domain.orders import OrderState
from videocopies.domain.shared import OrderId, UserId

# Users the bot cannot reach, per store: the inbox clears them, the users adapter sets them.
_BLOCKED: weakref.WeakKeyDictionary[InMemoryStore, dict[UserId, datetime]] = weakref.WeakKeyDictionary()


def _blocked(store: InMemoryStore) -> dict[UserId, datetime]:
    return _BLOCKED.setdefault(store, {})


class InMemoryInbox:
    def __init__(self, store: InMemoryStore) -> None:
        self._store = store
        self.events: dict[int, InboxEvent] = {}  # by update id
        self.processed: dict[int, str] = {}  # update id -> outcome
        self._held: set[UserId] = set()  # claimed by an open turn
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
            if (user_id in self._held or (users is not None and user_id not in users)
                    or (head.waits_for_file and (head.received_at or now) > now - self.fetch_timeout)):
                continue  # held by another turn, not asked for, or its file is not there yet
            if counts[texts] < (limit if texts else others):
                counts[texts] += 1
                claimed.append(user_id)
        self._held |= set(claimed)
        return claimed, [e for u in claimed for e in by_user[u]]

    def done(self, event: InboxEvent, replies: Sequence[OutboxMessage], outcome: str) -> None:
        known = {m.dedup_key for m in self._store.outbox.values()}
        for message in replies:
            if message.dedup_key not in known:
                self._store.outbox[next(self._store._outbox_ids)] = message
        self.processed[event.update_id] = outcome
        blocked = _blocked(self._store)
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

    async def claim(
        self, now: datetime, limit: int, others: int, users: Sequence[UserId] | None = None
    ) -> Sequence[InboxEvent]:
        claimed, events = self._inbox.claim(now, limit, others, users)
        self.users += claimed
        return events

    async def savepoint(self) -> None:
        await self.uow.savepoint()

    async def undo(self) -> None:
        await self.uow.undo()

    def done(self, handled: Sequence[tuple[InboxEvent, Sequence[OutboxMessage], str]]) -> None:
        self._handled += handled

    async def commit(self) -> None:
        for event, replies, outcome in self._handled:
            self._inbox.done(event, replies, outcome)
        self._handled = []
        await self.uow.commit()


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

    async def open_orders(self, user_id: UserId) -> Sequence[OrderId]:
        return [
            o.order_id for o in sorted(self._store.orders.values(), key=lambda o: o.created_at)
            if o.user_id == user_id and o.state in (OrderState.CONFIRMED, OrderState.RUNNING)
        ]

    async def block(self, user_id: UserId, now: datetime) -> None:
        _blocked(self._store)[user_id] = now

    async def blocked(self, user_ids: Sequence[UserId]) -> set[UserId]:
        return set(user_ids) & set(_blocked(self._store))

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


class InMemoryOutboxQueue:
    """The outbox as edge takes it, over the store's outbox: the same order of claims as
    PostgresOutboxQueue (replies first, then copies by turns, at most `per_user` of a user)."""

    def __init__(self, store: InMemoryStore) -> None:
        self._store = store
        self.claimed_until: dict[int, datetime] = {}
        self.attempts: dict[int, int] = {}
        self.deliveries: dict[int, dict[str, Any]] = {}

    def _unsent(self) -> dict[int, list[tuple[int, OutboxMessage]]]:
        by_user: dict[int, list[tuple[int, OutboxMessage]]] = {}
        for message_id, message in sorted(self._store.outbox.items()):
            if message_id not in self._store.outbox_sent:
                by_user.setdefault(message.user_id, []).append((message_id, message))
        return by_user

    def _message(self, message_id: int) -> QueuedMessage:
        m = self._store.outbox[message_id]
        blocked = m.user_id in _blocked(self._store)
        return QueuedMessage(message_id, m.user_id, m.kind, m.payload, self.attempts.get(message_id, 0), blocked)

    async def claim(
        self, now: datetime, limit: int, hold_s: float = 60.0, per_user: int = 3
    ) -> Sequence[QueuedMessage]:
        def held(message_id: int) -> bool:
            until = self.claimed_until.get(message_id)
            return until is not None and until > now

        by_user = self._unsent()
        replies = []
        for rows in by_user.values():
            for n, (message_id, message) in enumerate(rows[:per_user]):
                earlier = rows[:n]
                if message.kind == COPY or held(message_id):
                    continue
                if not any(m.kind == COPY or held(i) for i, m in earlier):
                    replies.append(message_id)
        replies = sorted(replies)[:limit]
        turns = []
        for rows in by_user.values():
            if not any(m.kind == COPY for _, m in rows):
                continue
            first = rows[:per_user]
            for n, (message_id, _) in enumerate(first):
                behind_copy = any(m.kind == COPY for _, m in first[:n + 1])
                if behind_copy and not held(message_id) and not any(held(i) for i, _ in first[:n]):
                    turns.append((n + 1, message_id))
        taken = replies + [message_id for _, message_id in sorted(turns)[:limit - len(replies)]]
        for message_id in taken:
            self.claimed_until[message_id] = now + timedelta(seconds=hold_s)
            self.attempts[message_id] = self.attempts.get(message_id, 0) + 1
        return in_turns([self._message(i) for i in taken])

    async def get(self, message_id: int) -> QueuedMessage | None:
        return self._message(message_id) if message_id in self._store.outbox else None

    async def among(self, message_ids: Sequence[int], kind: str | None = None) -> list[QueuedMessage]:
        return [
            self._message(i) for i in sorted(set(message_ids))
            if i in self._store.outbox and (kind is None or self._store.outbox[i].kind == kind)
        ]

    async def copies_among(self, message_ids: Sequence[int]) -> list[QueuedMessage]:
        return await self.among(message_ids, COPY)

    async def unsent_of(self, user_id: int) -> list[QueuedMessage]:
        return [self._message(i) for i, _ in self._unsent().get(user_id, [])]

    async def queue(self, messages: Sequence[OutboxMessage]) -> None:
        known = {m.dedup_key for m in self._store.outbox.values()}
        for message in messages:
            if message.dedup_key not in known:
                known.add(message.dedup_key)
                self._store.outbox[next(self._store._outbox_ids)] = message

    async def sent_many(self, deliveries: Sequence[tuple[int, dict[str, Any]]]) -> int:
        recorded = 0
        for message_id, delivery in deliveries:
            if message_id in self._store.outbox and message_id not in self._store.outbox_sent:
                self._store.outbox_sent.add(message_id)
                self.deliveries[message_id] = delivery
                self.claimed_until.pop(message_id, None)
                recorded += 1
        return recorded

    async def sent(self, message_id: int, delivery: dict[str, Any]) -> bool:
        return bool(await self.sent_many([(message_id, delivery)]))

    async def give_up(self, deliveries: Sequence[tuple[int, dict[str, Any]]]) -> int:
        return await self.sent_many(deliveries)

    async def retry_later(self, message_id: int, not_before: datetime) -> None:
        if message_id in self._store.outbox and message_id not in self._store.outbox_sent:
            self.claimed_until[message_id] = not_before

    async def anything(self) -> bool:
        return any(True for rows in self._unsent().values() for _ in rows)
