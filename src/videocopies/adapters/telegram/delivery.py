"""One outbox message sent to Telegram, when the pacer lets it go: an invoice, a text with its
buttons, or a copy (fetched from storage before its turn: storage is not Telegram)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any, Protocol

from aiogram import Bot
from aiogram.methods import EditMessageReplyMarkup
from aiogram.types import FSInputFile, InlineKeyboardButton, InlineKeyboardMarkup, LabeledPrice

from videocopies.adapters.telegram.botapi import LeanBotApi
from videocopies.adapters.telegram.pacing import Pacer


class CopyFetcher(Protocol):
    async def fetch(self, key: str, url: str | None, path: Path) -> None: ...


class Delivery:
    def __init__(self, bot: Bot, copies: CopyFetcher, work_dir: Path, pacer: Pacer, connections: int) -> None:
        self._bot, self._copies, self._work_dir, self._pacer = bot, copies, work_dir, pacer
        self._api = LeanBotApi(bot, connections)

    async def close(self) -> None:
        await self._api.close()

    async def edit(
        self, chat_id: int, message_id: int, text: str, buttons: list[list[dict[str, str]]], urgent: bool
    ) -> None:
        """Edit a text message the bot sent, paced like a send; no buttons removes its buttons."""
        await self._pacer.admit(chat_id, urgent)
        await self._api.edit_text(chat_id, message_id, text, buttons)

    async def unbutton(self, chat_id: int, message_id: int, urgent: bool) -> None:
        """Take every button off a message the bot sent, paced like a send."""
        await self._pacer.admit(chat_id, urgent)
        await self._api.call(EditMessageReplyMarkup, {"chat_id": chat_id, "message_id": message_id})

    async def send(self, message: dict[str, Any], urgent: bool) -> tuple[int, str | None]:
        """Send one message, paced; its Telegram message id and, for a video, the file id."""
        chat_id = message["chat_id"]
        if invoice := message.get("invoice"):
            await self._pacer.admit(chat_id, urgent)
            sent = await self._bot.send_invoice(
                chat_id, title=invoice["title"], description=invoice["description"],
                payload=invoice["payload"], currency="XTR",
                prices=[LabeledPrice(label=invoice["label"], amount=invoice["stars"])],
            )
            return sent.message_id, None
        video = message.get("video")
        if not video:
            await self._pacer.admit(chat_id, urgent)
            return await self._api.send_text(chat_id, message["text"], message["buttons"]), None
        markup = None
        if message["buttons"]:
            markup = InlineKeyboardMarkup(inline_keyboard=[
                [InlineKeyboardButton(text=b["text"], callback_data=b["data"]) for b in row]
                for row in message["buttons"]
            ])
        self._work_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=self._work_dir) as scratch:
            path = Path(scratch) / "copy.mp4"
            await self._copies.fetch(video["key"], video.get("url"), path)
            await self._pacer.admit(chat_id, urgent)
            sent = await self._bot.send_video(
                chat_id, FSInputFile(path, filename="copy.mp4"), caption=message["text"],
                reply_markup=markup, supports_streaming=True,
            )
        media = sent.video or sent.document
        return sent.message_id, media.file_id if media is not None else None
