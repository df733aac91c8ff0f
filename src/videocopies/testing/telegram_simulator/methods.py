"""The Bot API methods the simulator answers, on top of `SimulatorState`; HTTP lives in app.py."""

from __future__ import annotations

import re
from collections.abc import Callable

from videocopies.testing.telegram_simulator import errors
from videocopies.testing.telegram_simulator.accounts import DEFAULT_UPDATE_KINDS, BotAccount, Chat, Webhook
from videocopies.testing.telegram_simulator.chats import message_text, new_message, reply_markup, target_chat
from videocopies.testing.telegram_simulator.commands import get_my_commands, set_my_commands
from videocopies.testing.telegram_simulator.errors import BotApiError, bad_request
from videocopies.testing.telegram_simulator.files import (
    CLOUD_DOWNLOAD_LIMIT,
    CLOUD_UPLOAD_LIMIT,
    LOCAL_UPLOAD_LIMIT,
    StoredFile,
)
from videocopies.testing.telegram_simulator.params import Params, Upload
from videocopies.testing.telegram_simulator.payments import (
    answer_pre_checkout_query,
    get_star_transactions,
    refund_star_payment,
    send_invoice,
)
from videocopies.testing.telegram_simulator.state import SimulatorState

Method = Callable[[SimulatorState, BotAccount, Params], object]
MAX_TEXT = 4096
MAX_CAPTION = 1024


async def get_updates(state: SimulatorState, bot: BotAccount, p: Params) -> list[dict]:
    offset = p.int("offset", 0)
    limit = min(max(p.int("limit", 100), 1), 100)
    timeout = max(p.int("timeout", 0), 0)
    with state.lock:
        if bot.webhook is not None:
            raise BotApiError(409, errors.WEBHOOK_ACTIVE)
        if (allowed := p.json("allowed_updates")) is not None:
            bot.allowed_updates = frozenset(allowed) if allowed else DEFAULT_UPDATE_KINDS
            bot.pending = [u for u in bot.pending if u.kind in bot.allowed_updates]
        if offset > 0:
            state.confirm_before(bot, offset)
        elif offset < 0:
            keep = bot.pending[offset:]
            bot.pending = keep
        bot.poll_generation += 1
        generation = bot.poll_generation
    bot.updates_changed.notify()  # wakes an older poll so it can see it was superseded

    def ready() -> list[dict] | BotApiError | None:
        with state.lock:
            if bot.poll_generation != generation:
                return BotApiError(409, errors.OTHER_GETUPDATES)
            if bot.webhook is not None:
                return BotApiError(409, errors.WEBHOOK_ACTIVE)
            if bot.pending:
                return [u.to_json() for u in bot.pending[:limit]]
            return None

    result = await bot.updates_changed.wait_for(ready, timeout) if timeout else ready()
    if isinstance(result, BotApiError):
        raise result
    return result or []


def get_me(state: SimulatorState, bot: BotAccount, p: Params) -> dict:
    return bot.to_json()


def set_webhook(state: SimulatorState, bot: BotAccount, p: Params) -> bool:
    url = p.str("url", "")
    if p.bool("drop_pending_updates"):
        bot.pending.clear()
    if (allowed := p.json("allowed_updates")) is not None:
        bot.allowed_updates = frozenset(allowed) if allowed else DEFAULT_UPDATE_KINDS
    if not url:
        bot.webhook = None
        return True
    if not url.startswith(("http://", "https://")):
        raise bad_request("bad webhook: An HTTPS URL must be provided for webhook")
    secret = p.str("secret_token")
    if secret is not None and not re.fullmatch(r"[A-Za-z0-9_-]{1,256}", secret):
        raise bad_request("secret token contains unallowed characters")
    bot.webhook = Webhook(url, secret)
    bot.updates_changed.notify()
    return True


def delete_webhook(state: SimulatorState, bot: BotAccount, p: Params) -> bool:
    bot.webhook = None
    if p.bool("drop_pending_updates"):
        bot.pending.clear()
    bot.updates_changed.notify()
    return True


def get_webhook_info(state: SimulatorState, bot: BotAccount, p: Params) -> dict:
    hook = bot.webhook
    info = {"url": hook.url if hook else "", "has_custom_certificate": False, "pending_update_count": len(bot.pending)}
    if hook and hook.last_error:
        info.update(last_error_message=hook.last_error, last_error_date=hook.last_error_date)
    if bot.allowed_updates != DEFAULT_UPDATE_KINDS:
        info["allowed_updates"] = sorted(bot.allowed_updates)
    return info


def send_message(state: SimulatorState, bot: BotAccount, p: Params) -> dict:
    chat = target_chat(state, bot, p)
    text = message_text(p, "text", MAX_TEXT, empty="message text is empty")
    markup = reply_markup(p)
    state.admit_send(bot, chat)
    message = new_message(state, bot, chat, text=text)
    if markup:
        message["reply_markup"] = markup
    state.record(bot, chat, "sendMessage", message)
    return message


def edit_message_text(state: SimulatorState, bot: BotAccount, p: Params) -> dict:
    chat, old = _message_to_edit(state, bot, p)
    if "text" not in old:
        raise bad_request("there is no text in the message to edit")
    text = message_text(p, "text", MAX_TEXT, empty="message text is empty")
    markup = reply_markup(p)
    return _edit(state, bot, chat, old, "editMessageText", {"text": text}, markup)


def edit_message_reply_markup(state: SimulatorState, bot: BotAccount, p: Params) -> dict:
    chat, old = _message_to_edit(state, bot, p)
    return _edit(state, bot, chat, old, "editMessageReplyMarkup", {}, reply_markup(p))


def send_video(state: SimulatorState, bot: BotAccount, p: Params) -> dict:
    return _send_file(state, bot, p, "video")


def send_document(state: SimulatorState, bot: BotAccount, p: Params) -> dict:
    return _send_file(state, bot, p, "document")


def get_file(state: SimulatorState, bot: BotAccount, p: Params) -> dict:
    file_id = p.str("file_id")
    if not file_id:
        raise bad_request("file_id not specified")
    stored = state.files.get(file_id)
    if stored is None:
        raise BotApiError(400, errors.WRONG_FILE_ID_OR_UNAVAILABLE)
    if not state.local and stored.size > CLOUD_DOWNLOAD_LIMIT:
        raise bad_request("file is too big")
    body = {"file_id": stored.file_id, "file_unique_id": stored.file_unique_id, "file_size": stored.size}
    body["file_path"] = state.files.assign_path(stored, bot.token)
    return body


def answer_callback_query(state: SimulatorState, bot: BotAccount, p: Params) -> bool:
    query = bot.callback_queries.get(p.str("callback_query_id") or "")
    if query is None or query.answered or state.clock() - query.pressed_at > state.settings.callback_deadline:
        raise BotApiError(400, errors.QUERY_TOO_OLD)
    if len(p.str("text", "")) > 200:
        raise bad_request("MESSAGE_TOO_LONG")
    query.answered, query.answered_at = True, state.clock()
    query.text = p.str("text", "") or None
    return True


def delete_message(state: SimulatorState, bot: BotAccount, p: Params) -> bool:
    chat = target_chat(state, bot, p, require_started=False, reaches_user=False)
    if chat.messages.pop(p.int("message_id", 0), None) is None:
        raise bad_request("message to delete not found")
    return True


def send_chat_action(state: SimulatorState, bot: BotAccount, p: Params) -> bool:
    target_chat(state, bot, p)
    return True


def _message_to_edit(state: SimulatorState, bot: BotAccount, p: Params) -> tuple[Chat, dict]:
    if p.has("inline_message_id"):
        raise bad_request("inline messages are not simulated")
    chat = target_chat(state, bot, p, require_started=False)
    old = chat.messages.get(p.int("message_id", 0))
    if old is None or old.get("from", {}).get("id") != bot.id:
        raise BotApiError(400, errors.MESSAGE_TO_EDIT_NOT_FOUND)
    return chat, old


def _edit(state: SimulatorState, bot: BotAccount, chat: Chat, old: dict, method: str, content: dict,
          markup: dict | None) -> dict:
    edited = {k: v for k, v in old.items() if k not in ("reply_markup", "edit_date")}
    edited.update(content)
    if markup:
        edited["reply_markup"] = markup
    if all(edited.get(k) == old.get(k) for k in ("text", "caption", "reply_markup")):
        with state.lock:
            state.not_modified += 1  # Telegram counts these against the bot's limits too
        raise BotApiError(400, errors.NOT_MODIFIED)
    edited["edit_date"] = int(state.clock())
    state.record(bot, chat, method, edited)
    return edited


def _send_file(state: SimulatorState, bot: BotAccount, p: Params, kind: str) -> dict:
    chat = target_chat(state, bot, p)
    source = p.file(kind)
    if source is None:
        raise bad_request(f"there is no {kind} in the request")
    caption = message_text(p, "caption", MAX_CAPTION, empty=None)
    markup = reply_markup(p)
    stored = _stored(state, source, kind)
    state.admit_send(bot, chat)
    media = stored.to_json()
    if kind == "video":
        media.update(width=p.int("width", 0), height=p.int("height", 0), duration=p.int("duration", 0))
    message = new_message(state, bot, chat, **{kind: media})
    if caption:
        message["caption"] = caption
    if markup:
        message["reply_markup"] = markup
    state.record(bot, chat, "sendVideo" if kind == "video" else "sendDocument", message)
    return message


def _stored(state: SimulatorState, source: Upload | str, kind: str) -> StoredFile:
    if isinstance(source, Upload):
        limit = LOCAL_UPLOAD_LIMIT if state.local else CLOUD_UPLOAD_LIMIT
        if len(source.data) > limit:
            raise BotApiError(413, "Request Entity Too Large")
        if not source.data:
            raise bad_request("file must be non-empty")
        stored = state.files.add(source.data, kind=kind, file_name=source.filename)
        if kind == "video" and not stored.mime_type:
            stored.mime_type = "video/mp4"
        return stored
    if source.startswith(("http://", "https://")):
        raise bad_request("failed to get HTTP URL content")
    stored = state.files.get(source)
    if stored is None:
        raise BotApiError(400, errors.WRONG_FILE_ID)
    return stored


METHODS: dict[str, Method] = {
    "getme": get_me,
    "getupdates": get_updates,
    "setwebhook": set_webhook,
    "deletewebhook": delete_webhook,
    "getwebhookinfo": get_webhook_info,
    "sendmessage": send_message,
    "editmessagetext": edit_message_text,
    "editmessagereplymarkup": edit_message_reply_markup,
    "answercallbackquery": answer_callback_query,
    "getmycommands": get_my_commands,
    "sendvideo": send_video,
    "senddocument": send_document,
    "getfile": get_file,
    "deletemessage": delete_message,
    "sendchataction": send_chat_action,
    "setmycommands": set_my_commands,
    "sendinvoice": send_invoice,
    "answerprecheckoutquery": answer_pre_checkout_query,
    "refundstarpayment": refund_star_payment,
    "getstartransactions": get_star_transactions,
}


# Methods that answer at once, under the state's lock; getUpdates may wait (a long poll), and
# the webhook methods start or stop a delivery task besides.
WAITING = frozenset({"getupdates", "setwebhook", "deletewebhook"})


async def call(state: SimulatorState, token: str, method: str, p: Params) -> object:
    """Run one Bot API method; raises `BotApiError` as Telegram would answer."""
    if method.lower() == "getupdates":
        with state.lock:
            bot = state.bot(token)
        return await get_updates(state, bot, p)
    return call_now(state, token, method, p)


def call_now(state: SimulatorState, token: str, method: str, p: Params) -> object:
    """`call` for a method that never waits (anything but getUpdates)."""
    handler = METHODS.get(method.lower())
    with state.lock:
        bot = state.bot(token)
        if handler is None:
            raise BotApiError(404, "Not Found")
        return handler(state, bot, p)
