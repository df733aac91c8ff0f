"""Telegram adapters: aiogram I/O for the edge role, and a Bot API simulator for tests and the demo."""
