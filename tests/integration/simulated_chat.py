"""One user's chat with a bot on the Bot API simulator's lax profile (no 502s or flood refusals to
retry, only what Telegram answers a message), and edge's delivery to it: for tests of what edge
does to messages already sent."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import attrs
from aiogram import Bot
from aiogram.client.session.aiohttp import AiohttpSession

from videocopies.adapters.telegram.delivery import Delivery
from videocopies.adapters.telegram.pacing import Pacer, PacingSettings
from videocopies.testing.telegram_simulator import LAX, BotApiSimulator


class NoCopies:
    async def fetch(self, key: str, url: str | None, path: Path) -> None:
        raise AssertionError("no copy is sent here")


@attrs.frozen
class Chat:
    sim: BotApiSimulator
    bot: Bot
    user: Any
    pacer: Pacer
    delivery: Delivery


@contextlib.asynccontextmanager
async def simulated_chat(tmp_path: Path) -> AsyncIterator[Chat]:
    """Ann has sent /start; the bot's session and the delivery are closed afterwards."""
    async with BotApiSimulator(**LAX) as sim:
        token = sim.create_bot()
        bot = Bot(token, session=AiohttpSession(api=sim.api_server()))
        user = sim.create_user(token, first_name="Ann")
        user.send_text("/start")
        pacer = Pacer(PacingSettings(chat_rate=100.0, chat_burst=100))
        delivery = Delivery(bot, NoCopies(), tmp_path, pacer, 4)
        try:
            yield Chat(sim, bot, user, pacer, delivery)
        finally:
            await delivery.close()
            await bot.session.close()
