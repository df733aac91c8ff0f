"""/language: the user chooses the language the bot speaks; their Telegram's language stays the
default and no longer decides once they chose. The same cases on the in-memory adapters, on
PostgreSQL and through PgBouncer; the screens are drawn as edge draws them, in the language the
bot keeps for the user."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from videocopies.adapters.screens import Screen, render
from videocopies.application.ports import BotUser, InboxEvent
from videocopies.domain.shared import UserId

from .conftest import Backend

ANNA = BotUser(UserId(9), "ru", "Анна")
BOB = BotUser(UserId(8), "en", "Bob")


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
        async with self.backend.new_uow() as uow:
            rows = [(i, m) for i, m in await uow.outbox.pending(1000) if i > self._seen]
        if rows:
            self._seen = max(i for i, _ in rows)
        language = await self.users.language(user.user_id)
        return [render(m.kind, m.payload, language) for _, m in rows if m.user_id == user.user_id]


@pytest.fixture
def chat(backend: Backend) -> Chat:
    return Chat(backend)


async def test_a_user_chooses_the_language_and_telegram_no_longer_decides(chat: Chat) -> None:
    (offer,) = await chat.send(ANNA, "text", text="/language")
    assert offer.text == "На каком языке мне говорить?"
    assert [(b.text, b.data) for b in offer.buttons[0]] == [("English", "l:en"), ("Русский", "l:ru")]

    (chosen,) = await chat.send(ANNA, "button", data="l:en")
    assert chosen.text == "From now on I speak English. /language changes it."
    (balance,) = await chat.send(ANNA, "text", text="/balance")  # her Telegram still says Russian
    assert balance.text.startswith("Available: ")
    assert await chat.users.language(ANNA.user_id) == "en"
    if hasattr(chat.users, "languages"):  # what edge reads for the messages it sends
        assert await chat.users.languages([ANNA.user_id]) == {ANNA.user_id: "en"}

    (back,) = await chat.send(ANNA, "button", data="l:ru")
    assert back.text == "Теперь я говорю по-русски. Сменить язык — /language."
    assert await chat.users.language(ANNA.user_id) == "ru"


async def test_without_a_choice_the_bot_follows_telegram(chat: Chat) -> None:
    (welcome,) = await chat.send(BOB, "text", text="/start")
    assert welcome.text.startswith("Hi, Bob!")
    (welcome,) = await chat.send(BotUser(BOB.user_id, "ru", "Bob"), "text", text="/balance")
    assert welcome.text.startswith("Доступно: ")


async def test_a_language_the_bot_does_not_speak_is_not_chosen(chat: Chat) -> None:
    await chat.send(BOB, "text", text="/start")
    (refused,) = await chat.send(BOB, "button", data="l:de")
    assert refused.text == "This button is no longer valid."
    assert await chat.users.language(BOB.user_id) == "en"
