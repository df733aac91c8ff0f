"""A user talking to the bot through its inbox, on any backend: an update in, the inbox turns run,
the replies read from the outbox and drawn as edge draws them, in the language the bot keeps for
the user (their /language choice, else their Telegram's)."""

from __future__ import annotations

import itertools
from typing import Any

from videocopies.adapters.screens import Screen, render
from videocopies.application.ports import BotUser, InboxEvent

from .conftest import Backend


class Chat:
    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        service: Any = backend.service
        self.inbox = service.gateways.inbox()
        self.users = service.gateways.bot_users()
        self.processor = service.bot.inbox_processor()
        self._updates = itertools.count(1)
        self._seen = 0

    async def send(self, user: BotUser, kind: str, **fields: Any) -> list[Screen]:
        await self.inbox.add([InboxEvent(next(self._updates), user, kind, **fields)], self.backend.clock.now())
        while await self.processor.turn():
            pass
        return await self.received(user)

    async def received(self, user: BotUser) -> list[Screen]:
        async with self.backend.new_uow() as uow:
            rows = [(i, m) for i, m in await uow.outbox.pending(1000) if i > self._seen]
        if rows:
            self._seen = max(i for i, _ in rows)
        language = await self.users.language(user.user_id)
        return [render(m.kind, m.payload, language) for _, m in rows if m.user_id == user.user_id]
