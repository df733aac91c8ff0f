"""The bot's menu of commands, set in Telegram in every language the bot speaks (setMyCommands):
English for everyone, Russian for users whose Telegram speaks Russian."""

from __future__ import annotations

import logging

from aiogram import Bot
from aiogram.types import BotCommand

from videocopies.adapters.screens import text

log = logging.getLogger(__name__)
COMMANDS = ("start", "balance", "history", "buy", "invite", "language", "help")
SPOKEN = ("en", "ru")


def commands(language: str) -> list[BotCommand]:
    return [BotCommand(command=name, description=text(language, f"command_{name}")) for name in COMMANDS]


async def announce_commands(bot: Bot) -> bool:
    """The menu in each language (English also as the default for any other); False when Telegram
    would not take it (the bot works without a menu, so this is only logged)."""
    try:
        for language in SPOKEN:
            await bot.set_my_commands(commands(language), language_code=language)
        await bot.set_my_commands(commands("en"))
    except Exception as error:  # noqa: BLE001 - a menu is a nicety: the bot serves without it
        log.warning("setMyCommands refused: %r", error)
        return False
    return True
