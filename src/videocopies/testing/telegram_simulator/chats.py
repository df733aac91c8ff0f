"""Pieces every sending method shares: the target chat, a new bot message, keyboards and text."""

from __future__ import annotations

import html
import re

from videocopies.testing.telegram_simulator import errors
from videocopies.testing.telegram_simulator.accounts import BotAccount, Chat
from videocopies.testing.telegram_simulator.errors import BotApiError, bad_request, forbidden
from videocopies.testing.telegram_simulator.params import Params
from videocopies.testing.telegram_simulator.state import SimulatorState


def target_chat(
    state: SimulatorState, bot: BotAccount, p: Params, *, require_started: bool = True, reaches_user: bool = True,
) -> Chat:
    """The chat a call names. `reaches_user`: the call shows the user something (a message, an edit,
    a chat action), which Telegram refuses with 403 once the user blocked the bot."""
    if not p.has("chat_id"):
        raise bad_request("chat_id is empty")
    chat = bot.chats.get(p.int("chat_id"))
    if chat is None:
        raise BotApiError(400, errors.CHAT_NOT_FOUND)
    if reaches_user:
        state.refuse_blocked(chat)
    if require_started and not chat.started:
        raise forbidden("bot can't initiate conversation with a user")
    return chat


def new_message(state: SimulatorState, bot: BotAccount, chat: Chat, **content) -> dict:
    message = {
        "message_id": state.next_message_id(bot, chat.user.id),
        "from": bot.user_json(),
        "chat": chat.user.chat_json(),
        "date": int(state.clock()),
    }
    message.update(content)
    return message


def reply_markup(p: Params) -> dict | None:
    markup = p.json("reply_markup")
    if markup is None:
        return None
    if not isinstance(markup, dict):
        raise bad_request("can't parse reply keyboard markup JSON object")
    if "inline_keyboard" in markup:
        rows = markup["inline_keyboard"]
        if not isinstance(rows, list) or not all(isinstance(row, list) for row in rows):
            raise bad_request("can't parse inline keyboard button: field \"inline_keyboard\" must be an Array")
        for button in (b for row in rows for b in row):
            if not isinstance(button, dict) or not button.get("text"):
                raise bad_request("can't parse inline keyboard button: Text buttons are unallowed in the inline "
                                  "keyboard")
            if "callback_data" in button and not 1 <= len(str(button["callback_data"]).encode()) <= 64:
                raise bad_request("BUTTON_DATA_INVALID")
    return markup


def message_text(p: Params, name: str, limit: int, *, empty: str | None) -> str:
    raw = p.str(name, "") or ""
    text = _strip_markup(raw) if (p.str("parse_mode") or "").upper() == "HTML" else raw
    if not text.strip() and empty:
        raise bad_request(empty)
    if len(text) > limit:
        raise bad_request("message is too long" if name == "text" else "message caption is too long")
    return text


def _strip_markup(text: str) -> str:
    # Telegram turns HTML into plain text plus entities; the simulator keeps the plain text only.
    return html.unescape(re.sub(r"<[^>]+>", "", text))
