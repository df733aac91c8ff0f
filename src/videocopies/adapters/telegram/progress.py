"""Each order's progress message on edge: the order's accepted screen, edited in place as the
order goes (rendering copy k of n, delivered k of n, closed).

Within Telegram's limits for edits: an edit that would show what the message already shows is
not made (Telegram refuses it, "message is not modified"); an order's rendering figures move
the message at most once every `every_s` (its other states at once, paced like every send); a
state older than the order's end is dropped. A message that cannot be edited any more (the user
deleted it, Telegram no longer allows edits) is replaced by a new one, once, and the report
tells core (`moved`), so the next edits go to the new message.

Buttons that stop meaning anything lose them here too (`unbutton`): the message a spent button
was pressed on, before the reply to the press, and a quote whose price expired, when core says
so (it keeps the time, so an edge that restarted or took over from another does it as well).
Each message once: taken off again, Telegram would refuse the edit ("message is not modified"),
which is taken as done."""

from __future__ import annotations

import json
import time
from collections import Counter, OrderedDict
from collections.abc import Callable
from typing import Any

from aiogram.exceptions import TelegramBadRequest

from videocopies.adapters.telegram.delivery import Delivery

NOT_MODIFIED = "message is not modified"
GONE = ("message to edit not found", "message can't be edited", "message_id_invalid",
        "there is no text in the message to edit")


def progress_of(message: dict[str, Any]) -> dict[str, Any] | None:
    """The progress part of a claimed message, for a state that edits its order's message."""
    progress = message.get("progress")
    return progress if progress and not progress.get("carrier") else None


class _Lru(OrderedDict[Any, Any]):
    def __init__(self, size: int) -> None:
        super().__init__()
        self._size = size

    def put(self, key: Any, value: Any) -> None:
        self[key] = value
        self.move_to_end(key)
        while len(self) > self._size:
            self.popitem(last=False)


class ProgressMessages:
    def __init__(
        self, delivery: Delivery, every_s: float = 2.5, clock: Callable[[], float] = time.monotonic,
        remember: int = 20_000, counts: Counter[str] | None = None,
    ) -> None:
        self._delivery, self._every_s, self._clock = delivery, every_s, clock
        self._shown_in = _Lru(remember)  # order id -> the Telegram message showing its progress
        self._showing = _Lru(remember)  # (chat, message id) -> (text, buttons) shown now
        self._edited_at = _Lru(remember)  # order id -> when its message was last edited
        self._ended = _Lru(remember)  # order ids whose final state was shown
        self._unbuttoned = _Lru(remember)  # (chat, message id) whose buttons were taken off
        # Shared with the sender's counters, which edge reports to core (videocopies_edge_sender_progress_*).
        self.counts: Counter[str] = Counter() if counts is None else counts

    async def unbutton(self, message: dict[str, Any], urgent: bool) -> None:
        """Take the buttons off message `unbutton` (a spent button was pressed on it, or its
        buttons lapsed), once; a message gone or no longer editable keeps them (there is
        nothing more to do)."""
        target = (message["chat_id"], message.get("unbutton"))
        if target[1] is None or target in self._unbuttoned:
            return
        try:
            await self._delivery.unbutton(message["chat_id"], int(target[1]), urgent)
        except TelegramBadRequest as refused:
            said = str(refused).lower()
            if NOT_MODIFIED not in said and not any(gone in said for gone in GONE):
                raise
        self._unbuttoned.put(target, True)
        self.counts["progress_unbuttoned"] += 1

    def sent(self, message: dict[str, Any], message_id: int) -> None:
        """A message was sent as it is: an order's accepted screen becomes its progress message."""
        progress = message.get("progress")
        if progress and progress.get("carrier"):
            self._shown_in.put(progress["order_id"], message_id)
            self._showing.put((message["chat_id"], message_id), _content(message))

    def due_at(self, message: dict[str, Any]) -> float:
        """When this state may be shown: a rendering figure waits for the order's last edit to age."""
        progress = progress_of(message)
        if progress is None or not progress.get("rendering"):
            return 0.0
        return float(self._edited_at.get(progress["order_id"], 0.0)) + self._every_s

    async def show(self, message: dict[str, Any], urgent: bool) -> dict[str, Any]:
        """Show a state in its order's message; the report's fields (the message that shows it,
        `moved` when a new message had to replace the old one)."""
        progress = progress_of(message)
        assert progress is not None
        order_id = progress["order_id"]
        if order_id in self._ended and not progress.get("final"):
            self.counts["progress_dropped"] += 1  # the order has ended: its end stays on screen
            return {}
        target = self._shown_in.get(order_id) or progress.get("edit")
        if target is not None and await self._edited(message, int(target), urgent):
            return self._shown(message, order_id, int(target))
        message_id, _ = await self._delivery.send(message, urgent)
        self.counts["progress_replaced"] += 1
        self._shown_in.put(order_id, message_id)
        return {**self._shown(message, order_id, message_id), "moved": True}

    async def _edited(self, message: dict[str, Any], target: int, urgent: bool) -> bool:
        """Edit `target` to show the message; False when it cannot be edited any more."""
        if self._showing.get((message["chat_id"], target)) == _content(message):
            self.counts["progress_unchanged"] += 1
            return True
        try:
            await self._delivery.edit(message["chat_id"], target, message["text"], message["buttons"], urgent)
        except TelegramBadRequest as refused:
            said = str(refused).lower()
            if NOT_MODIFIED in said:  # shown already (by an edge before a restart)
                return True
            if any(gone in said for gone in GONE):
                return False
            raise
        self.counts["progress_edits"] += 1
        return True

    def _shown(self, message: dict[str, Any], order_id: str, message_id: int) -> dict[str, Any]:
        self._showing.put((message["chat_id"], message_id), _content(message))
        self._edited_at.put(order_id, self._clock())
        if (progress_of(message) or {}).get("final"):
            self._ended.put(order_id, True)
        return {"message_id": message_id}


def _content(message: dict[str, Any]) -> tuple[str, str]:
    return message["text"], json.dumps(message["buttons"], sort_keys=True)
