"""Edge's webhook: the updates Telegram pushes, each stored by the receiver like a polled one."""

from __future__ import annotations

import hmac
import logging

from aiogram import Bot
from aiohttp import web

from videocopies.adapters.telegram.receiver import Receiver
from videocopies.adapters.telegram.updates import is_update_id

log = logging.getLogger(__name__)


class WebhookReceiver:
    """Updates pushed by Telegram: each is answered 200 once core has stored it (readable or
    not), so a refusal or a crash makes Telegram deliver it again, and a poison update is
    never delivered again and again. The secret token is checked first."""

    def __init__(self, receiver: Receiver, bot: Bot, secret: str) -> None:
        self._receiver, self._bot, self._secret = receiver, bot, secret
        self.refused = 0

    def app(self) -> web.Application:
        app = web.Application(client_max_size=1024 * 1024)
        app.router.add_post("/telegram/webhook", self._handle)
        return app

    async def _handle(self, request: web.Request) -> web.Response:
        presented = request.headers.get("X-Telegram-Bot-Api-Secret-Token", "")
        if not hmac.compare_digest(presented.encode(), self._secret.encode()):
            self.refused += 1
            return web.Response(status=401, text="wrong secret token")
        try:
            update = await request.json()
        except ValueError:
            return web.Response(status=400, text="not an update")
        if not isinstance(update, dict) or not is_update_id(update.get("update_id")):
            return web.Response(status=400, text="not an update")
        try:
            await self._receiver.store([update])
        except Exception as error:  # noqa: BLE001 - Telegram delivers it again
            log.warning("update %s not stored: %r", update["update_id"], error)
            return web.Response(status=503, text="not stored")
        return web.Response(status=200)
