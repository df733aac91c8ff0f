"""A Telegram Bot API simulator: aiogram cannot tell it from Telegram for the methods the service uses.

Tests, the demo and load runs start `BotApiSimulator`, create bot tokens and simulated users, and
drive the users in-process or over the /_sim HTTP endpoints (see docs/telegram-simulator.md)."""

from videocopies.testing.telegram_simulator.accounts import Received
from videocopies.testing.telegram_simulator.app import create_app
from videocopies.testing.telegram_simulator.errors import BotApiError, UserActionRefused
from videocopies.testing.telegram_simulator.server import BotApiSimulator
from videocopies.testing.telegram_simulator.settings import LAX, Settings
from videocopies.testing.telegram_simulator.state import SimulatorState
from videocopies.testing.telegram_simulator.users import SimulatedUser, matcher

__all__ = [
    "LAX", "BotApiError", "BotApiSimulator", "Received", "Settings", "SimulatedUser", "SimulatorState",
    "UserActionRefused", "create_app", "matcher",
]
