"""The simulator's in-memory world: bots, users, their private chats, pending updates and payments.

Everything here is synchronous and guarded by one lock, so the HTTP app (in the server's thread)
and a test (in its own event loop) can both drive it; waiting is done on `Signal`s."""

from __future__ import annotations

import itertools
import math
import secrets
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path

import attrs

from videocopies.adapters.telegram.simulator.errors import BotApiError
from videocopies.adapters.telegram.simulator.files import FileStore
from videocopies.adapters.telegram.simulator.signal import Signal

# What Telegram sends when getUpdates/setWebhook never named allowed_updates.
DEFAULT_UPDATE_KINDS = frozenset(
    {"message", "edited_message", "channel_post", "edited_channel_post", "inline_query", "chosen_inline_result",
     "callback_query", "shipping_query", "pre_checkout_query", "poll", "poll_answer", "my_chat_member",
     "chat_join_request", "business_connection", "business_message", "edited_business_message",
     "deleted_business_messages", "purchased_paid_media", "chat_boost", "removed_chat_boost"}
)


@attrs.frozen
class Settings:
    mode: str = "cloud"  # "cloud" (api.telegram.org limits) or "local" (a local Bot API server)
    callback_deadline: float = 15.0  # seconds after a press within which answerCallbackQuery works
    pre_checkout_deadline: float = 10.0
    chat_rate: int | None = 20  # sends per second per chat before 429; None: no limit
    global_rate: int | None = 30  # sends per second per bot before 429
    webhook_retry_delay: float = 0.2
    # Telegram never reuses an update id; a simulator restarted before the same bot's service
    # must not either, or the service takes its updates for ones it has already stored.
    first_update_id: int = 1


@attrs.define(eq=False)
class Update:
    update_id: int
    kind: str
    payload: dict

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
    changed: Signal = attrs.Factory(Signal)
    sends: deque = attrs.Factory(deque)


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
    sends: deque = attrs.Factory(deque)

    def to_json(self) -> dict:
        return {
            "id": self.id, "is_bot": True, "first_name": self.first_name, "username": self.username,
            "can_join_groups": True, "can_read_all_group_messages": False, "supports_inline_queries": False,
            "can_connect_to_business": False, "has_main_web_app": False,
        }

    def user_json(self) -> dict:
        return {"id": self.id, "is_bot": True, "first_name": self.first_name, "username": self.username}


class SimulatorState:
    def __init__(
        self, settings: Settings | None = None, *, files_dir: Path | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.settings = settings or Settings()
        if self.settings.mode not in ("cloud", "local"):
            raise ValueError(f"mode must be 'cloud' or 'local', not {self.settings.mode!r}")
        self.clock = clock
        self.lock = threading.RLock()
        self._tmp = None
        if files_dir is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="botapi-sim-")
            files_dir = Path(self._tmp.name)
        self.files = FileStore(Path(files_dir), local=self.local)
        self.bots: dict[str, BotAccount] = {}
        self.users: dict[int, tuple[BotAccount, Profile]] = {}
        self._update_ids = itertools.count(self.settings.first_update_id)
        self._seq = itertools.count(1)
        self._bot_ids = itertools.count(7_000_000_001)
        self._user_ids = itertools.count(100_000_001)
        self._message_ids: dict[tuple[int, int], itertools.count] = {}
        self.delivered = 0  # messages bots sent to users, all chats

    @property
    def local(self) -> bool:
        return self.settings.mode == "local"

    def close(self) -> None:
        if self._tmp is not None:
            self._tmp.cleanup()

    # -- accounts ---------------------------------------------------------------------------

    def create_bot(
        self, token: str | None = None, *, username: str | None = None, first_name: str = "Sim Bot",
    ) -> BotAccount:
        with self.lock:
            if token is None:
                bot_id = next(self._bot_ids)
                token = f"{bot_id}:{secrets.token_urlsafe(26)}"
            else:
                head = token.split(":", 1)[0]
                if not head.isdigit() or ":" not in token:
                    raise ValueError("a bot token looks like '<digits>:<secret>'")
                bot_id = int(head)
            if token in self.bots:
                return self.bots[token]
            bot = BotAccount(id=bot_id, token=token, username=username or f"sim{bot_id}_bot", first_name=first_name)
            self.bots[token] = bot
            return bot

    def bot(self, token: str) -> BotAccount:
        try:
            return self.bots[token]
        except KeyError:
            raise BotApiError(401, "Unauthorized") from None

    def default_bot(self) -> BotAccount:
        with self.lock:
            if not self.bots:
                return self.create_bot()
            return next(iter(self.bots.values()))

    def create_user(
        self, bot: BotAccount, *, user_id: int | None = None, first_name: str = "User",
        language_code: str | None = "en", last_name: str | None = None, username: str | None = None,
    ) -> Profile:
        with self.lock:
            if user_id is None:
                user_id = next(self._user_ids)
            if user_id in self.users:
                raise ValueError(f"user {user_id} already exists")
            profile = Profile(user_id, first_name, language_code, last_name, username)
            self.users[user_id] = (bot, profile)
            bot.chats[user_id] = Chat(profile)
            return profile

    def chat_of(self, user_id: int) -> tuple[BotAccount, Chat]:
        with self.lock:
            bot, _ = self.users[user_id]
            return bot, bot.chats[user_id]

    # -- updates ----------------------------------------------------------------------------

    def push_update(self, bot: BotAccount, kind: str, payload: dict) -> Update | None:
        with self.lock:
            if kind not in bot.allowed_updates:
                return None  # Telegram does not even create updates the bot did not ask for
            update = Update(next(self._update_ids), kind, payload)
            bot.pending.append(update)
        bot.updates_changed.notify()
        return update

    def confirm_before(self, bot: BotAccount, update_id: int) -> None:
        with self.lock:
            bot.pending = [u for u in bot.pending if u.update_id >= update_id]

    def next_message_id(self, bot: BotAccount, chat_id: int) -> int:
        counter = self._message_ids.setdefault((bot.id, chat_id), itertools.count(1))
        return next(counter)

    def record(self, bot: BotAccount, chat: Chat, method: str, message: dict) -> Received:
        with self.lock:
            chat.messages[message["message_id"]] = message
            entry = Received(next(self._seq), method, message, self.clock())
            chat.received.append(entry)
            self.delivered += 1
        chat.changed.notify()
        return entry

    # -- rate limits --------------------------------------------------------------------------

    def admit_send(self, bot: BotAccount, chat: Chat) -> None:
        """Count one send, or refuse it with 429 when the chat or the bot is over its rate."""
        now = self.clock()
        retry = max(_retry_after(bot.sends, self.settings.global_rate, now),
                    _retry_after(chat.sends, self.settings.chat_rate, now))
        if retry:
            raise BotApiError(429, f"Too Many Requests: retry after {retry}", retry_after=retry)
        bot.sends.append(now)
        chat.sends.append(now)


def _retry_after(window: deque, rate: int | None, now: float) -> int:
    while window and window[0] <= now - 1.0:
        window.popleft()
    if rate is None or len(window) < rate:
        return 0
    return max(1, math.ceil(window[0] + 1.0 - now))


def inline_buttons(message: dict) -> list[dict]:
    markup = message.get("reply_markup") or {}
    return [button for row in markup.get("inline_keyboard", []) for button in row]
