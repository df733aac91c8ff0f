"""What the simulated Telegram holds: bots, users and their private chats, updates, callback
queries and payments. Plain records; `SimulatorState` changes them under its lock."""

from __future__ import annotations

import attrs

from videocopies.testing.telegram_simulator.flood import Bucket
from videocopies.testing.telegram_simulator.signal import Signal

# What Telegram sends when getUpdates/setWebhook never named allowed_updates.
DEFAULT_UPDATE_KINDS = frozenset(
    {"message", "edited_message", "channel_post", "edited_channel_post", "inline_query", "chosen_inline_result",
     "callback_query", "shipping_query", "pre_checkout_query", "poll", "poll_answer", "my_chat_member",
     "chat_join_request", "business_connection", "business_message", "edited_business_message",
     "deleted_business_messages", "purchased_paid_media", "chat_boost", "removed_chat_boost"}
)


@attrs.define(eq=False)
class Update:
    update_id: int
    kind: str
    payload: object  # a dict from Telegram; anything JSON from `push_raw`

    def to_json(self) -> dict:
        return {"update_id": self.update_id, self.kind: self.payload}


@attrs.define(eq=False)
class Received:
    """One thing the bot did in a user's chat: a new message, or an edit of an earlier one."""

    seq: int
    method: str
    message: dict
    at: float

    @property
    def kind(self) -> str:
        return "edit" if self.method.startswith("edit") else "new"

    @property
    def text(self) -> str:
        return self.message.get("text") or self.message.get("caption") or ""

    @property
    def message_id(self) -> int:
        return self.message["message_id"]

    @property
    def buttons(self) -> list[str]:
        """The callback data of every inline button, row by row."""
        return [b["callback_data"] for b in inline_buttons(self.message) if "callback_data" in b]

    def to_json(self) -> dict:
        return {"seq": self.seq, "method": self.method, "kind": self.kind, "at": self.at, "message": self.message}


@attrs.define(eq=False)
class Profile:
    id: int
    first_name: str
    language_code: str | None = None
    last_name: str | None = None
    username: str | None = None

    def to_json(self) -> dict:
        body: dict = {"id": self.id, "is_bot": False, "first_name": self.first_name}
        for name in ("last_name", "username", "language_code"):
            if (value := getattr(self, name)) is not None:
                body[name] = value
        return body

    def chat_json(self) -> dict:
        body: dict = {"id": self.id, "type": "private", "first_name": self.first_name}
        if self.last_name:
            body["last_name"] = self.last_name
        if self.username:
            body["username"] = self.username
        return body


@attrs.define(eq=False)
class Chat:
    """The private chat between one user and one bot, as the user's app shows it."""

    user: Profile
    messages: dict[int, dict] = attrs.Factory(dict)
    received: list[Received] = attrs.Factory(list)
    cursor: int = 0  # seq of the last record handed out by `next_message`
    started: bool = False
    blocked: bool = False
    told_blocked: bool = False  # the bot was answered 403 since the user blocked it
    changed: Signal = attrs.Factory(Signal)
    flood: Bucket = attrs.Factory(Bucket)


@attrs.define(eq=False)
class Webhook:
    url: str
    secret_token: str | None = None
    last_error: str | None = None
    last_error_date: int | None = None


@attrs.define(eq=False)
class CallbackQuery:
    id: str
    user_id: int
    pressed_at: float
    answered: bool = False
    answered_at: float | None = None  # when answerCallbackQuery took effect (a call drawn slow: after its delay)
    text: str | None = None  # what the answer told the user, if anything

    def to_json(self) -> dict:
        return {"id": self.id, "user_id": self.user_id, "pressed_at": self.pressed_at, "answered_at": self.answered_at,
                "text": self.text}


@attrs.define(eq=False)
class Invoice:
    chat_id: int
    message_id: int
    title: str
    payload: str
    currency: str
    total_amount: int


@attrs.define(eq=False)
class PreCheckout:
    id: str
    user_id: int
    invoice: Invoice
    created_at: float
    delivery: str  # "deliver", "drop" or "duplicate": what happens to the successful_payment update
    outcome: str = "pending"  # pending, paid, declined, expired
    error_message: str | None = None
    charge_id: str | None = None


@attrs.define(eq=False)
class Charge:
    id: str
    user_id: int
    amount: int
    payload: str
    refunded: bool = False


@attrs.define(eq=False)
class BotAccount:
    id: int
    token: str
    username: str
    first_name: str
    pending: list[Update] = attrs.Factory(list)
    updates_changed: Signal = attrs.Factory(Signal)
    allowed_updates: frozenset[str] = DEFAULT_UPDATE_KINDS
    webhook: Webhook | None = None
    poll_generation: int = 0
    chats: dict[int, Chat] = attrs.Factory(dict)
    callback_queries: dict[str, CallbackQuery] = attrs.Factory(dict)
    invoices: dict[tuple[int, int], Invoice] = attrs.Factory(dict)
    pre_checkouts: dict[str, PreCheckout] = attrs.Factory(dict)
    charges: dict[str, Charge] = attrs.Factory(dict)
    transactions: list[dict] = attrs.Factory(list)
    flood: Bucket = attrs.Factory(Bucket)
    commands: dict[str, list[dict]] = attrs.Factory(dict)  # setMyCommands, by language ("" the default)

    def to_json(self) -> dict:
        return {
            "id": self.id, "is_bot": True, "first_name": self.first_name, "username": self.username,
            "can_join_groups": True, "can_read_all_group_messages": False, "supports_inline_queries": False,
            "can_connect_to_business": False, "has_main_web_app": False,
        }

    def user_json(self) -> dict:
        return {"id": self.id, "is_bot": True, "first_name": self.first_name, "username": self.username}


def inline_buttons(message: dict) -> list[dict]:
    markup = message.get("reply_markup") or {}
    return [button for row in markup.get("inline_keyboard", []) for button in row]
