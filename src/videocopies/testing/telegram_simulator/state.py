"""The simulator's in-memory world (accounts.py), and what Telegram refuses or fails at in it.

Everything here is synchronous and guarded by one lock, so the HTTP app (in the server's thread)
and a test (in its own event loop) can both drive it; waiting is done on `Signal`s."""

from __future__ import annotations

import itertools
import random
import secrets
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from videocopies.testing.telegram_simulator.accounts import BotAccount, Chat, Profile, Received, Update
from videocopies.testing.telegram_simulator.errors import BotApiError, forbidden
from videocopies.testing.telegram_simulator.files import FileStore
from videocopies.testing.telegram_simulator.flood import retry_after, too_many_requests
from videocopies.testing.telegram_simulator.settings import Settings

# What `draw_fault` answers
BAD_GATEWAY = "bad_gateway"
SLOW = "slow"


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
        # What a load run checks the bot against; all counted since the start.
        self.flood_violations = 0  # sends inside an open 429 window
        self.refused_429 = 0  # every 429, the ones that opened a window included
        self.sends_after_blocked = 0  # sends to a chat after 403 "blocked" was answered for it
        self.not_modified = 0  # edits refused as "message is not modified" (the same text and markup)
        self.faults = 0  # calls answered 502, or late
        self.slow_answers = 0  # of those, the late ones
        self.sent_by_kind: dict[str, int] = {}  # successful calls that put something in a chat, by method
        s = self.settings
        self._fault_below, self._slow_below = s.fault_rate, s.fault_rate + s.slow_rate
        self._random = random.Random(s.seed).random

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

    def push_update(self, bot: BotAccount, kind: str, payload: object) -> Update | None:
        """Queue an update of `kind` for the bot, or None when the bot did not ask for that kind."""
        with self.lock:
            if kind not in bot.allowed_updates:
                return None  # Telegram does not even create updates the bot did not ask for
            update = Update(next(self._update_ids), kind, payload)
            bot.pending.append(update)
        bot.updates_changed.notify()
        return update

    def push_raw(self, bot: BotAccount, kind: str, payload: object) -> Update | None:
        """Any update, as given: what Telegram might deliver, or what an odd client could make it
        deliver. Only the update_id is filled in; kinds the bot did not ask for are not delivered."""
        if not isinstance(kind, str) or not kind or kind == "update_id":
            raise ValueError(f"an update kind is a field name other than update_id, not {kind!r}")
        return self.push_update(bot, kind, payload)

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
            self.sent_by_kind[method] = self.sent_by_kind.get(method, 0) + 1
        chat.changed.notify()
        return entry

    # -- what Telegram refuses ------------------------------------------------------------------

    def admit_send(self, bot: BotAccount, chat: Chat) -> None:
        """Take a token from the chat's and the bot's bucket, or refuse with 429 (see flood.py)."""
        now = self.clock()
        window = bot.flood.open_until if bot.flood.open_until > chat.flood.open_until else chat.flood.open_until
        if window > now:
            self.flood_violations += 1
            self.refused_429 += 1
            raise too_many_requests(retry_after(window - now))
        s = self.settings
        chat_wait = 0.0 if s.chat_rate is None else chat.flood.wait(now, s.chat_burst, s.chat_rate)
        bot_wait = 0.0 if s.global_rate is None else bot.flood.wait(now, s.global_burst, s.global_rate)
        if chat_wait or bot_wait:
            retry = 0
            for bucket, wait in ((chat.flood, chat_wait), (bot.flood, bot_wait)):
                if wait:
                    bucket.open_until = now + retry_after(wait)
                    retry = max(retry, retry_after(wait))
            self.refused_429 += 1
            raise too_many_requests(retry)
        if s.chat_rate is not None:
            chat.flood.tokens -= 1.0
        if s.global_rate is not None:
            bot.flood.tokens -= 1.0

    def refuse_blocked(self, chat: Chat) -> None:
        """403 for a call that would reach a user who blocked the bot; counted from the second on,
        since a sender that heard "blocked" once had no reason to try that chat again."""
        if chat.blocked:
            if chat.told_blocked:
                self.sends_after_blocked += 1
            chat.told_blocked = True
            raise forbidden("bot was blocked by the user")

    def draw_fault(self, may_wait: bool = True) -> str | None:
        """BAD_GATEWAY, SLOW or None for the next Bot API call. One draw per call, whatever the
        answer, so the same calls in the same order meet the same faults. A call that must not wait
        (a long poll, which is slow by design) is never SLOW."""
        if not self._slow_below:
            return None
        draw = self._random()
        if draw >= self._slow_below or (draw >= self._fault_below and not may_wait):
            return None
        self.faults += 1
        if draw < self._fault_below:
            return BAD_GATEWAY
        self.slow_answers += 1
        return SLOW

    def stats(self) -> dict:
        with self.lock:
            return {
                "delivered": self.delivered, "users": len(self.users),
                "polls": sum(bot.poll_generation for bot in self.bots.values()),
                "flood_violations": self.flood_violations, "refused_429": self.refused_429,
                "sends_after_blocked": self.sends_after_blocked, "faults": self.faults,
                "slow_answers": self.slow_answers, "sent_by_kind": dict(self.sent_by_kind),
                "not_modified": self.not_modified,
            }
