"""The outbox as edge takes it, in memory, with the same promises as PostgresOutboxQueue; and
the users the bot cannot reach, which the outbox reports, the users adapter sets and the
inbox clears."""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any

from videocopies.adapters.memory.unit_of_work import InMemoryStore
from videocopies.application.lapsing import UNBUTTON, buttons_until, unbutton_message
from videocopies.application.ports import OutboxMessage, QueuedMessage
from videocopies.application.use_cases.announcements import progress_key
from videocopies.application.use_cases.undeliverable import COPY, in_turns
from videocopies.domain.shared import UserId

# Users the bot cannot reach, per store.
_BLOCKED: weakref.WeakKeyDictionary[InMemoryStore, dict[UserId, datetime]] = weakref.WeakKeyDictionary()


def blocked_users(store: InMemoryStore) -> dict[UserId, datetime]:
    return _BLOCKED.setdefault(store, {})


class InMemoryOutboxQueue:
    """The outbox as edge takes it, over the store's outbox: the same order of claims as
    PostgresOutboxQueue (replies first, then copies by turns, at most `per_user` of a user)."""

    def __init__(self, store: InMemoryStore) -> None:
        self._store = store
        self.claimed_until: dict[int, datetime] = {}
        self.attempts: dict[int, int] = {}
        self.deliveries: dict[int, dict[str, Any]] = {}
        self.lapsing: dict[tuple[int, int], datetime] = {}  # (user, Telegram message) -> its buttons lapse
        self.lapsing_noticed: Callable[[datetime], None] | None = None  # as the PostgreSQL queue's

    def _unsent(self) -> dict[int, list[tuple[int, OutboxMessage]]]:
        by_user: dict[int, list[tuple[int, OutboxMessage]]] = {}
        for message_id, message in sorted(self._store.outbox.items()):
            if message_id not in self._store.outbox_sent:
                by_user.setdefault(message.user_id, []).append((message_id, message))
        return by_user

    def _message(self, message_id: int) -> QueuedMessage:
        m = self._store.outbox[message_id]
        blocked = m.user_id in blocked_users(self._store)
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
                self._lapsing(self._store.outbox[message_id], delivery)
        return recorded

    def _lapsing(self, message: OutboxMessage, delivery: dict[str, Any]) -> None:
        until = buttons_until(message.kind, message.payload)
        if until is not None and delivery.get("message_id") is not None and delivery.get("error") is None:
            self.lapsing.setdefault((message.user_id, int(delivery["message_id"])), until)
            if self.lapsing_noticed is not None:
                self.lapsing_noticed(until)
        if message.payload.get(UNBUTTON) is not None:  # a press took them off already
            self.lapsing.pop((message.user_id, int(message.payload[UNBUTTON])), None)

    async def lapse_buttons(self, now: datetime, limit: int = 100) -> int:
        due = sorted((until, key) for key, until in self.lapsing.items() if until <= now)[:limit]
        for _, key in due:
            del self.lapsing[key]
        await self.queue([unbutton_message(*key) for _, key in sorted(due, key=lambda d: d[1])])
        return len(due)

    async def next_lapse(self) -> datetime | None:
        return min(self.lapsing.values(), default=None)

    async def sent(self, message_id: int, delivery: dict[str, Any]) -> bool:
        return bool(await self.sent_many([(message_id, delivery)]))

    async def give_up(self, deliveries: Sequence[tuple[int, dict[str, Any]]]) -> int:
        return await self.sent_many(deliveries)

    async def retry_later(self, message_id: int, not_before: datetime) -> None:
        if message_id in self._store.outbox and message_id not in self._store.outbox_sent:
            self.claimed_until[message_id] = not_before

    async def progress_messages(self, order_ids: Sequence[str]) -> dict[str, int]:
        found = {}
        for message_id, message in self._store.outbox.items():
            delivered = self.deliveries.get(message_id, {}).get("message_id")
            if delivered is not None and message.dedup_key in {progress_key(o) for o in order_ids}:
                found[message.payload["order_id"]] = int(delivered)
        return found

    async def progress_moved(self, order_id: str, message_id: int) -> None:
        for sent_id, message in self._store.outbox.items():
            if message.dedup_key == progress_key(order_id) and sent_id in self._store.outbox_sent:
                self.deliveries.setdefault(sent_id, {})["message_id"] = message_id

    async def anything(self) -> bool:
        return any(True for rows in self._unsent().values() for _ in rows)
