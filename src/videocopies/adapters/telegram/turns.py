"""The messages edge has claimed and not yet sent: one queue per chat, sent in order, one at a
time per chat. A chat takes its turn when its own pacing allows; chats whose next message is a
reply to something the user just did go before chats waiting for a copy, and chats waiting for
copies take turns, so a user's ten copies never hold up another user's welcome.

A state of an order's progress message takes the place of the one of the same order still
queued, which is dropped (only the newest is worth showing; an order's end is never dropped),
and a chat whose next message is a rendering figure waits until that figure is due (`due_at`).
Those states take their turns with the copies; only an order's end goes with the replies."""

from __future__ import annotations

import heapq
import itertools
from collections import deque
from collections.abc import Callable
from typing import Any

from videocopies.adapters.telegram.pacing import Pacer
from videocopies.adapters.telegram.progress import progress_of

COPY = "copy_ready"


class ChatTurns:
    def __init__(
        self, pacer: Pacer, clock: Callable[[], float], due_at: Callable[[dict[str, Any]], float] = lambda _: 0.0
    ) -> None:
        self._pacer, self._clock, self._due_at = pacer, clock, due_at
        self._chats: dict[int, deque[dict[str, Any]]] = {}
        self._scheduled: set[int] = set()  # chats in a queue below, or being sent to
        self._replies: deque[int] = deque()  # chats whose next message answers the user
        self._copy_turns: deque[int] = deque()  # chats waiting for a copy, in turn
        self._later: list[tuple[float, int, int]] = []  # (when, seq, chat): paced or pausing after a failure
        self._seq = itertools.count()
        self.queued = 0

    def add(self, message: dict[str, Any]) -> list[dict[str, Any]]:
        """Queue a message; the messages it made worthless (an older state of the same order's
        progress), taken out of the queue."""
        chat_id = message["chat_id"]
        queue = self._chats.setdefault(chat_id, deque())
        if (progress := progress_of(message)) is not None:
            for n, queued in enumerate(queue):
                older = progress_of(queued)
                if older is not None and older["order_id"] == progress["order_id"]:
                    if older.get("final"):
                        return [message]  # the order's end is shown, whatever comes after it
                    del queue[n]  # the newer state keeps its own place: after the copies before it
                    queue.append(message)
                    return [queued]
        queue.append(message)
        self.queued += 1
        if chat_id not in self._scheduled:
            self._schedule(chat_id)
        return []

    def requeue(self, message: dict[str, Any]) -> None:
        """A message to try again goes before the rest of its chat."""
        self._chats.setdefault(message["chat_id"], deque()).appendleft(message)
        self.queued += 1

    def release_due(self) -> float | None:
        """Move chats whose time has come back to their queues; when the next one is due."""
        now = self._clock()
        while self._later and self._later[0][0] <= now:
            _, _, chat_id = heapq.heappop(self._later)
            self._scheduled.discard(chat_id)
            self._schedule(chat_id)
        return self._later[0][0] - now if self._later else None

    def next(self, reply_room: bool, copy_room: bool) -> tuple[dict[str, Any], bool] | None:
        """The next message to send and whether it answers the user, replies first; None when no
        chat whose kind has room is ready. Its chat stays scheduled until `after`."""
        while True:
            if self._replies and reply_room:
                chat_id, urgent = self._replies.popleft(), True
            elif self._copy_turns and copy_room:
                chat_id, urgent = self._copy_turns.popleft(), False
            else:
                return None
            if queue := self._chats.get(chat_id):
                self.queued -= 1
                return queue.popleft(), urgent
            self._scheduled.discard(chat_id)

    def after(self, chat_id: int, pause_s: float) -> None:
        """A message of the chat was sent or given up: the chat takes its next turn, after
        `pause_s` if it is pausing after a failure."""
        self._scheduled.discard(chat_id)
        if pause_s > 0 and self._chats.get(chat_id):
            self._scheduled.add(chat_id)
            heapq.heappush(self._later, (self._clock() + pause_s, next(self._seq), chat_id))
        else:
            self._schedule(chat_id)

    def drop(self, chat_id: int) -> deque[dict[str, Any]]:
        """The chat's queued messages, taken out of turn."""
        dropped = self._chats.pop(chat_id, deque())
        self.queued -= len(dropped)
        return dropped

    def clear(self) -> None:
        self._chats.clear()
        self._scheduled.clear()
        self._replies.clear()
        self._copy_turns.clear()
        self._later.clear()
        self.queued = 0

    def _schedule(self, chat_id: int) -> None:
        """Put a chat with queued messages where its next message belongs."""
        queue = self._chats.get(chat_id)
        if not queue:
            self._chats.pop(chat_id, None)
            self._scheduled.discard(chat_id)
            return
        self._scheduled.add(chat_id)
        ready = max(self._pacer.chat_ready_at(chat_id), self._due_at(queue[0]))
        if ready > self._clock():
            heapq.heappush(self._later, (ready, next(self._seq), chat_id))
        elif queue[0]["kind"] == COPY or _passing(queue[0]):
            self._copy_turns.append(chat_id)
        else:
            self._replies.append(chat_id)


def _passing(message: dict[str, Any]) -> bool:
    """A state of an order's progress short of its end: it waits with the copies, never taking the
    places (or the bot's reserve of sends) kept for replies to what users just did."""
    progress = progress_of(message)
    return progress is not None and not progress.get("final")
