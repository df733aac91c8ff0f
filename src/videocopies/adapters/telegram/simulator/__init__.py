"""A Telegram Bot API simulator: aiogram cannot tell it from Telegram for the methods the service uses.

Tests, the demo and load runs start `BotApiSimulator`, create bot tokens and simulated users, and
drive the users in-process or over the /_sim HTTP endpoints (see docs/telegram-simulator.md)."""

from videocopies.adapters.telegram.simulator.accounts import Received
from videocopies.adapters.telegram.simulator.app import create_app
from videocopies.adapters.telegram.simulator.errors import BotApiError, UserActionRefused
from videocopies.adapters.telegram.simulator.server import BotApiSimulator
from videocopies.adapters.telegram.simulator.settings import LAX, Settings
from videocopies.adapters.telegram.simulator.state import SimulatorState
from videocopies.adapters.telegram.simulator.users import SimulatedUser, matcher

__all__ = [
    "LAX", "BotApiError", "BotApiSimulator", "Received", "Settings", "SimulatedUser", "SimulatorState",
    "UserActionRefused", "create_app", "matcher",
]
