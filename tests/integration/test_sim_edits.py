"""The simulator refuses edits as Telegram does, through the real aiogram Bot: an edit that
changes nothing (text or buttons, by either method) is "message is not modified" and counted;
a message the user deleted is "message to edit not found"."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from aiogram import Bot
from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.exceptions import TelegramBadRequest
from aiogram.types import InlineKeyboardButton, InlineKeyboardMarkup

from videocopies.testing.telegram_simulator import LAX, BotApiSimulator, UserActionRefused


def keyboard(data: str) -> InlineKeyboardMarkup:
    return InlineKeyboardMarkup(inline_keyboard=[[InlineKeyboardButton(text=data, callback_data=data)]])


@pytest.fixture
async def sim() -> AsyncIterator[BotApiSimulator]:
    async with BotApiSimulator(**LAX) as simulator:
        yield simulator


async def test_an_edit_that_changes_nothing_is_refused_by_either_method_and_counted(sim: BotApiSimulator) -> None:
    token = sim.create_bot()
    bot = Bot(token, session=AiohttpSession(api=sim.api_server()))
    user = sim.create_user(token)
    user.send_text("hi")
    sent = await bot.send_message(user.id, "Working", reply_markup=keyboard("x:1"))
    with pytest.raises(TelegramBadRequest, match="message is not modified"):
        await bot.edit_message_reply_markup(chat_id=user.id, message_id=sent.message_id, reply_markup=keyboard("x:1"))
    with pytest.raises(TelegramBadRequest, match="message is not modified"):
        await bot.edit_message_text("Working", chat_id=user.id, message_id=sent.message_id,
                                    reply_markup=keyboard("x:1"))
    assert sim.state.not_modified == 2
    await bot.edit_message_reply_markup(chat_id=user.id, message_id=sent.message_id)  # the buttons go
    with pytest.raises(TelegramBadRequest, match="message is not modified"):
        await bot.edit_message_reply_markup(chat_id=user.id, message_id=sent.message_id)  # none to take off
    assert sim.state.stats()["not_modified"] == 3
    await bot.session.close()


async def test_a_message_the_user_deleted_cannot_be_edited(sim: BotApiSimulator) -> None:
    token = sim.create_bot()
    bot = Bot(token, session=AiohttpSession(api=sim.api_server()))
    user = sim.create_user(token)
    user.send_text("hi")
    sent = await bot.send_message(user.id, "Working", reply_markup=keyboard("x:1"))
    user.delete(sent.message_id)
    assert user.message(sent.message_id) is None
    with pytest.raises(TelegramBadRequest, match="message to edit not found"):
        await bot.edit_message_text("Done", chat_id=user.id, message_id=sent.message_id)
    with pytest.raises(TelegramBadRequest, match="message to edit not found"):
        await bot.edit_message_reply_markup(chat_id=user.id, message_id=sent.message_id)
    with pytest.raises(UserActionRefused):
        user.delete(sent.message_id)  # gone already
    assert sim.state.not_modified == 0
    await bot.session.close()
