"""Chats that refused the bot (403), shared by edge's sender and receiver."""

from __future__ import annotations

import time
from collections.abc import Callable


class BlockedChats:
    """A user who writes again has unblocked the bot. A chat is kept only for `remember_s`: it
    bridges the moment until core has heard of the block (core then gives up that user's
    messages itself), and with a webhook the user's next message may reach another edge's
    receiver."""

    def __init__(self, remember_s: float = 60.0, clock: Callable[[], float] = time.monotonic) -> None:
        self._chats: dict[int, float] = {}
        self._remember_s, self._clock = remember_s, clock

    def __contains__(self, chat_id: object) -> bool:
        since = self._chats.get(chat_id)  # type: ignore[call-overload]
        if since is None:
            return False
        if self._clock() - since > self._remember_s:
            del self._chats[chat_id]  # type: ignore[arg-type]
            return False
        return True

    def add(self, chat_id: int) -> None:
        self._chats[chat_id] = self._clock()

    def wrote(self, chat_id: int) -> None:
        self._chats.pop(chat_id, None)
