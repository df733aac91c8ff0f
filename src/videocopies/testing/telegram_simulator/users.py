"""Simulated users: what a person does in the Telegram app, and what they see the bot do."""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable

from videocopies.testing.telegram_simulator.accounts import (
    BotAccount,
    CallbackQuery,
    PreCheckout,
    Received,
    inline_buttons,
)
from videocopies.testing.telegram_simulator.errors import UserActionRefused
from videocopies.testing.telegram_simulator.payments import expired
from videocopies.testing.telegram_simulator.state import SimulatorState

Match = Callable[[Received], bool]
DELIVERIES = ("deliver", "drop", "duplicate")


def matcher(
    *, kind: str | None = None, method: str | None = None, contains: str | None = None,
    regex: str | None = None, media: str | None = None,
) -> Match:
    """A predicate over received entries; every given criterion must hold."""
    pattern = re.compile(regex) if regex else None

    def match(entry: Received) -> bool:
        return (
            (kind is None or entry.kind == kind)
            and (method is None or entry.method == method)
            and (contains is None or contains in entry.text)
            and (pattern is None or pattern.search(entry.text) is not None)
            and (media is None or media in entry.message)
        )

    return match


class SimulatedUser:
    """One user talking to one bot. Actions are synchronous; waiting for the bot is async."""

    def __init__(self, state: SimulatorState, user_id: int) -> None:
        self.state = state
        self.id = user_id
        self.bot, self.chat = state.chat_of(user_id)

    @property
    def profile(self):
        return self.chat.user

    # -- what the user does -------------------------------------------------------------------

    def send_text(self, text: str) -> dict:
        content: dict = {"text": text}
        if text.startswith("/"):
            command = text.split(maxsplit=1)[0]
            content["entities"] = [{"type": "bot_command", "offset": 0, "length": len(command)}]
        return self._send(content)

    def send_video(
        self, data: bytes, *, width: int, height: int, duration: int, file_name: str = "video.mp4",
        mime_type: str = "video/mp4", caption: str | None = None,
    ) -> dict:
        with self.state.lock:
            stored = self.state.files.add(data, kind="video", file_name=file_name, mime_type=mime_type)
        video = stored.to_json() | {"width": width, "height": height, "duration": duration}
        content: dict = {"video": video}
        if caption:
            content["caption"] = caption
        return self._send(content)

    def send_video_ref(
        self, file_id: str, file_unique_id: str | None = None, *, width: int = 640, height: int = 360,
        duration: int = 5, file_size: int | None = 1_000_000, file_name: str | None = "video.mp4",
        mime_type: str | None = "video/mp4", caption: str | None = None,
    ) -> dict:
        """A video message whose file the simulator does not hold: as Telegram delivers a video it
        can no longer serve, getFile answers "wrong file_id or the file is temporarily unavailable"."""
        video: dict = {"file_id": file_id, "file_unique_id": file_unique_id or "AgADgone" + secrets.token_hex(6),
                       "width": width, "height": height, "duration": duration}
        for name, value in (("file_name", file_name), ("mime_type", mime_type), ("file_size", file_size)):
            if value is not None:
                video[name] = value
        content: dict = {"video": video}
        if caption:
            content["caption"] = caption
        return self._send(content)

    def send_document(self, data: bytes, *, file_name: str, mime_type: str | None = None) -> dict:
        with self.state.lock:
            stored = self.state.files.add(data, kind="document", file_name=file_name, mime_type=mime_type)
        return self._send({"document": stored.to_json()})

    def press(self, message_id: int, data: str) -> str:
        """Press the inline button carrying `data` on a bot message; returns the callback query id."""
        with self.state.lock:
            message = self._bot_message(message_id)
            if data not in [b.get("callback_data") for b in inline_buttons(message)]:
                raise UserActionRefused(f"message {message_id} has no button with data {data!r}")
            query = CallbackQuery(str(secrets.randbits(63)), self.id, self.state.clock())
            self.bot.callback_queries[query.id] = query
            payload = {
                "id": query.id, "from": self.profile.to_json(), "message": message,
                "chat_instance": str(-(self.bot.id * 31 + self.id) % 10**19), "data": data,
            }
        self.state.push_update(self.bot, "callback_query", payload)
        return query.id

    def press_raw(self, data: str | None, message_id: int | None = None) -> str:
        """Press a button no bot message need carry: any `data` (a NUL, 100 bytes, None for none at
        all), as a tampering client could send. With a `message_id` the query carries that message
        (or, if the chat has none by that id, the inaccessible-message stub Telegram sends); without,
        an `inline_message_id` instead. The query is registered, so answerCallbackQuery works."""
        with self.state.lock:
            query = CallbackQuery(str(secrets.randbits(63)), self.id, self.state.clock())
            self.bot.callback_queries[query.id] = query
            payload: dict = {
                "id": query.id, "from": self.profile.to_json(),
                "chat_instance": str(-(self.bot.id * 31 + self.id) % 10**19),
            }
            if message_id is None:
                payload["inline_message_id"] = secrets.token_urlsafe(18)
            else:
                payload["message"] = self.chat.messages.get(message_id) or {
                    "chat": self.profile.chat_json(), "message_id": message_id, "date": 0,
                }
            if data is not None:
                payload["data"] = data
        self.state.push_update(self.bot, "callback_query", payload)
        return query.id

    def send_raw(self, kind: str, payload: object) -> int | None:
        """Any update for this user's bot, as given (see `SimulatorState.push_raw`); its update_id,
        or None when the bot did not ask for that kind."""
        update = self.state.push_raw(self.bot, kind, payload)
        return None if update is None else update.update_id

    def pay(self, message_id: int, *, successful_payment: str = "deliver") -> str:
        """Pay the invoice in a bot message; returns the pre-checkout query id. `successful_payment`
        says what becomes of the update once the bot accepts: delivered, dropped or duplicated."""
        if successful_payment not in DELIVERIES:
            raise ValueError(f"successful_payment must be one of {DELIVERIES}")
        with self.state.lock:
            self._bot_message(message_id)
            invoice = self.bot.invoices.get((self.id, message_id))
            if invoice is None:
                raise UserActionRefused(f"message {message_id} is not an invoice")
            query = PreCheckout(str(secrets.randbits(63)), self.id, invoice, self.state.clock(), successful_payment)
            self.bot.pre_checkouts[query.id] = query
            payload = {
                "id": query.id, "from": self.profile.to_json(), "currency": invoice.currency,
                "total_amount": invoice.total_amount, "invoice_payload": invoice.payload,
            }
        self.state.push_update(self.bot, "pre_checkout_query", payload)
        return query.id

    def block(self, blocked: bool = True) -> None:
        with self.state.lock:
            self.chat.blocked, self.chat.told_blocked = blocked, False

    # -- what the user sees -------------------------------------------------------------------

    @property
    def received(self) -> list[Received]:
        with self.state.lock:
            return list(self.chat.received)

    def message(self, message_id: int) -> dict | None:
        """The message as it is now, after any edits."""
        with self.state.lock:
            return self.chat.messages.get(message_id)

    def delete(self, message_id: int) -> None:
        """The user deletes a message from the chat: the bot can no longer edit it."""
        with self.state.lock:
            if self.chat.messages.pop(message_id, None) is None:
                raise UserActionRefused(f"no message {message_id} in the chat")

    async def next_message(
        self, match: Match | None = None, *, timeout: float = 5.0, after: int | None = None, **criteria,
    ) -> Received:
        """The first entry after the user's read cursor (or after seq `after`) that matches; the cursor
        moves to it. Raises TimeoutError if none comes in time."""
        test = match or matcher(**criteria)

        def find() -> Received | None:
            with self.state.lock:
                start = self.chat.cursor if after is None else after
                for entry in self.chat.received:
                    if entry.seq > start and test(entry):
                        self.chat.cursor = max(self.chat.cursor, entry.seq)
                        return entry
                return None

        found = await self.chat.changed.wait_for(find, timeout)
        if found is None:
            raise TimeoutError(f"user {self.id} received nothing matching within {timeout} s")
        return found

    def download(self, file_id: str) -> bytes:
        with self.state.lock:
            if self.state.files.get(file_id) is None:
                raise UserActionRefused(f"no file {file_id!r}")
            return self.state.files.read(file_id)

    def download_video(self, entry: Received | dict) -> bytes:
        message = entry.message if isinstance(entry, Received) else entry
        media = message.get("video") or message.get("document")
        if media is None:
            raise UserActionRefused("that message carries no video")
        return self.download(media["file_id"])

    def payment(self, pre_checkout_query_id: str) -> dict:
        with self.state.lock:
            query = self.bot.pre_checkouts[pre_checkout_query_id]
            expired(self.state, query)
            return payment_json(query)

    async def payment_outcome(self, pre_checkout_query_id: str, *, timeout: float = 11.0) -> dict:
        """Wait until the bot accepted or declined the payment, or its time ran out."""

        def settled() -> dict | None:
            status = self.payment(pre_checkout_query_id)
            return None if status["outcome"] == "pending" else status

        return await self.chat.changed.wait_for(settled, timeout) or self.payment(pre_checkout_query_id)

    # -- internals ----------------------------------------------------------------------------

    def _send(self, content: dict) -> dict:
        with self.state.lock:
            if self.chat.blocked:  # writing to a blocked bot unblocks it in the app
                self.chat.blocked, self.chat.told_blocked = False, False
            self.chat.started = True
            message = {
                "message_id": self.state.next_message_id(self.bot, self.id), "from": self.profile.to_json(),
                "chat": self.profile.chat_json(), "date": int(self.state.clock()),
            } | content
            self.chat.messages[message["message_id"]] = message
        self.state.push_update(self.bot, "message", message)
        return message

    def _bot_message(self, message_id: int) -> dict:
        message = self.chat.messages.get(message_id)
        if message is None or message.get("from", {}).get("id") != self.bot.id:
            raise UserActionRefused(f"there is no bot message {message_id} in the chat")
        return message


def payment_json(query: PreCheckout) -> dict:
    return {
        "pre_checkout_query_id": query.id, "user_id": query.user_id, "outcome": query.outcome,
        "telegram_payment_charge_id": query.charge_id, "error_message": query.error_message,
        "total_amount": query.invoice.total_amount, "invoice_payload": query.invoice.payload,
    }


def create_user(state: SimulatorState, bot: BotAccount | None = None, **profile) -> SimulatedUser:
    profile_obj = state.create_user(bot or state.default_bot(), **profile)
    return SimulatedUser(state, profile_obj.id)

