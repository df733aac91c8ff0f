"""/language: the user chooses the language the bot speaks; their Telegram's language stays the
default and no longer decides once they chose. The same cases on the in-memory adapters, on
PostgreSQL and through PgBouncer; the screens are drawn as edge draws them, in the language the
bot keeps for the user."""

from __future__ import annotations

import pytest

from videocopies.application.ports import BotUser
from videocopies.domain.shared import UserId

from .chat import Chat
from .conftest import Backend

ANNA = BotUser(UserId(9), "ru", "Анна")
BOB = BotUser(UserId(8), "en", "Bob")


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
