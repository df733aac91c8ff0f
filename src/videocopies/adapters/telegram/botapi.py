"""Bot API calls on edge's hot paths, and what each refusal means for the message.

`LeanBotApi` posts plain JSON over kept-alive connections (`JsonWire`) for updates, text
screens and callback answers: aiogram's request and response models, and a general HTTP
client, cost several times more than the request itself, and a burst is thousands of them.
Any answer but success goes to aiogram, which raises its usual exception.
"""

from __future__ import annotations

import contextlib
import enum
import json
from typing import Any
from urllib.parse import urlsplit

from aiogram import Bot
from aiogram.exceptions import (
    TelegramBadRequest,
    TelegramEntityTooLarge,
    TelegramForbiddenError,
    TelegramNetworkError,
    TelegramRetryAfter,
    TelegramServerError,
)
from aiogram.methods import EditMessageText, SendMessage, TelegramMethod

from videocopies.adapters.http.wire import JsonWire


class LeanBotApi:
    """With a proxy configured on the bot's session, every call goes through aiogram's session
    (and so through the proxy): the wire connects directly only."""

    def __init__(self, bot: Bot, connections: int = 100) -> None:
        self._bot = bot
        parts = urlsplit(bot.session.api.api_url(bot.token, "getMe"))
        self._proxied = getattr(bot.session, "_proxy", None) is not None
        self._wire = JsonWire(f"{parts.scheme}://{parts.netloc}", connections)
        self._paths: dict[str, str] = {}

    async def close(self) -> None:
        await self._wire.close()

    async def call(self, method: type[TelegramMethod[Any]], body: dict[str, Any], timeout_s: float = 60.0) -> Any:
        if self._proxied:
            result = await self._bot(method(**body), request_timeout=int(timeout_s))
            return _as_json(result)
        name = method.__api_method__
        path = self._paths.get(name)
        if path is None:
            parts = urlsplit(self._bot.session.api.api_url(self._bot.token, name))
            path = self._paths[name] = parts.path + (f"?{parts.query}" if parts.query else "")
        try:
            status, content = await self._wire.post(path, json.dumps(body, ensure_ascii=False).encode(), timeout_s)
        except (OSError, TimeoutError) as error:
            raise TelegramNetworkError(method=method.model_construct(**body), message=repr(error)) from error
        if status == 200:
            with contextlib.suppress(ValueError, KeyError, TypeError):
                answer = json.loads(content)
                if answer["ok"] is True:
                    return answer["result"]
        called = method.model_construct(**body)
        text = content.decode(errors="replace")
        if status >= 500 and not text.startswith("{"):  # a proxy's page, not the Bot API's answer
            raise TelegramServerError(method=called, message=f"{status}: {text[:200]}")
        self._bot.session.check_response(self._bot, called, status, text)  # raises aiogram's error
        raise TelegramNetworkError(method=called, message=f"unexpected answer: {text[:200]}")

    async def send_text(self, chat_id: int, text: str, buttons: list[list[dict[str, str]]]) -> int:
        body: dict[str, Any] = {"chat_id": chat_id, "text": text, **_markup(buttons)}
        return int((await self.call(SendMessage, body))["message_id"])

    async def edit_text(self, chat_id: int, message_id: int, text: str, buttons: list[list[dict[str, str]]]) -> None:
        """Without buttons, the message's buttons are removed (as Telegram does for an edit without markup)."""
        await self.call(EditMessageText, {"chat_id": chat_id, "message_id": message_id, "text": text,
                                          **_markup(buttons)})


def _markup(buttons: list[list[dict[str, str]]]) -> dict[str, Any]:
    if not buttons:
        return {}
    return {"reply_markup": {"inline_keyboard": [
        [{"text": b["text"], "callback_data": b["data"]} for b in row] for row in buttons
    ]}}


def _as_json(result: Any) -> Any:
    """An aiogram result as the Bot API's JSON, which the wire's callers read."""
    if isinstance(result, list):
        return [_as_json(item) for item in result]
    if hasattr(result, "model_dump"):
        return result.model_dump(mode="json", by_alias=True, exclude_none=True)
    return result


class Refusal(enum.Enum):
    """Why Telegram did not take a message, as core is told (`refusal` of a report)."""

    BLOCKED = "blocked"  # 403: blocked, deactivated, never started: final until the user writes again
    CHAT_NOT_FOUND = "chat_not_found"
    TOO_LARGE = "too_large"  # 413: over the upload limit of the Bot API server in use
    REJECTED = "rejected"  # any other 400: this message will never be taken as it is
    GAVE_UP = "gave_up"  # transient failures, retried until the attempts ran out


def refusal_of(error: BaseException) -> Refusal | None:
    """The final refusal an error means; None when trying again may work (5xx, network, 429)."""
    if isinstance(error, TelegramRetryAfter):
        return None
    if isinstance(error, TelegramEntityTooLarge):
        return Refusal.TOO_LARGE
    if isinstance(error, TelegramForbiddenError):
        return Refusal.BLOCKED
    if isinstance(error, TelegramBadRequest):
        text = str(error).lower()
        if "chat not found" in text or "user not found" in text:
            return Refusal.CHAT_NOT_FOUND
        if "too big" in text or "too large" in text:
            return Refusal.TOO_LARGE
        return Refusal.REJECTED
    # 5xx, the network, an unreadable answer, 401/404/409 (the bot's setup, not this message):
    # tried again, a bounded number of times.
    return None
