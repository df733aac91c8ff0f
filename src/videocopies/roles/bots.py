"""The aiogram Bot a process talks to Telegram with: edge's, and core's or `payments`' for the
payment provider."""

from __future__ import annotations

from aiogram import Bot
from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.client.telegram import TelegramAPIServer

from videocopies.settings.links import BotLink


def telegram_bot(link: BotLink) -> Bot:
    """The bot on Telegram or another Bot API server, through the proxy when one is set
    (http://, socks5://: aiogram's session takes it as it is)."""
    assert link.token is not None, "the settings refuse a bot without a token"
    api = TelegramAPIServer.from_base(link.api_url, is_local=link.local) if link.api_url else None
    if api is None and link.proxy is None:
        return Bot(link.token)
    session = AiohttpSession(proxy=link.proxy) if api is None else AiohttpSession(api=api, proxy=link.proxy)
    return Bot(link.token, session=session)
