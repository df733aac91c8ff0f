"""The bot's menu of commands in both languages (issue 20, build 4): set at edge's start with
setMyCommands, and read back from the Bot API simulator with getMyCommands."""

from __future__ import annotations

from aiogram import Bot
from aiogram.client.session.aiohttp import AiohttpSession

from videocopies.adapters.telegram.commands import COMMANDS, announce_commands
from videocopies.testing.telegram_simulator import BotApiSimulator


async def test_the_menu_is_set_in_english_and_in_russian() -> None:
    async with BotApiSimulator() as sim:
        bot = Bot(sim.create_bot(), session=AiohttpSession(api=sim.api_server()))
        try:
            assert await bot.get_my_commands(language_code="ru") == []
            assert await announce_commands(bot)
            english = await bot.get_my_commands()
            russian = await bot.get_my_commands(language_code="ru")
            assert await bot.get_my_commands(language_code="en") == english
        finally:
            await bot.session.close()
    assert [c.command for c in english] == [c.command for c in russian] == list(COMMANDS)
    assert english[1].description == "Your coins and when they expire"
    assert russian[1].description == "Ваши монеты и когда они сгорят"
