"""The bot's screens in Russian and English, their words from gettext message catalogs.

Telegram presentation, used by core's outbox and inbox routes (adapters/http) and by edge's
receiver: beside the adapters, not inside adapters/telegram, which imports the HTTP client."""

from .catalogs import text
from .render import Button, Invoice, Screen, render

__all__ = ["Button", "Invoice", "Screen", "render", "text"]
