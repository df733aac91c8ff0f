"""The bot's menu of commands: setMyCommands keeps it per language, getMyCommands reads it back."""

from __future__ import annotations

from videocopies.testing.telegram_simulator.accounts import BotAccount
from videocopies.testing.telegram_simulator.errors import bad_request
from videocopies.testing.telegram_simulator.params import Params
from videocopies.testing.telegram_simulator.state import SimulatorState


def set_my_commands(state: SimulatorState, bot: BotAccount, p: Params) -> bool:
    """Kept by language (the default under ""), as Telegram shows them in the menu."""
    commands = p.json("commands")
    if not isinstance(commands, list) or len(commands) > 100 or not all(
        isinstance(c, dict) and isinstance(c.get("command"), str) and 1 <= len(c["command"]) <= 32
        and isinstance(c.get("description"), str) and 1 <= len(c["description"]) <= 256 for c in commands
    ):
        raise bad_request("BOT_COMMANDS_INVALID")
    bot.commands[p.str("language_code", "") or ""] = [{"command": c["command"], "description": c["description"]}
                                                 for c in commands]
    return True


def get_my_commands(state: SimulatorState, bot: BotAccount, p: Params) -> list[dict]:
    return list(bot.commands.get(p.str("language_code", "") or "", []))
