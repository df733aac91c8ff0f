"""How fast edge may send: Telegram's flood control, obeyed before it refuses.

Telegram takes about 30 messages a second from one bot and about one a second in one chat,
short bursts allowed; past that it answers 429 with `retry_after`, and refuses every send
inside that window again. The maintained clients treat a 429 as covering the whole bot, and
so does this pacer: one refusal pauses every send until the window closes. Buckets are a
little stricter than Telegram's so that clock jitter between the two never tips a send over.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import attrs


@attrs.frozen
class PacingSettings:
    bot_rate: float = 30.0  # messages per second, whole bot
    bot_burst: int = 20
    chat_rate: float = 1.0  # messages per second, one chat
    chat_burst: int = 2

    @classmethod
    def from_env(cls, env: dict[str, str]) -> PacingSettings:
        return cls(
            bot_rate=float(env.get("VIDEOCOPIES_TELEGRAM_RATE", "30")),
            bot_burst=int(env.get("VIDEOCOPIES_TELEGRAM_BURST", "20")),
            chat_rate=float(env.get("VIDEOCOPIES_TELEGRAM_CHAT_RATE", "1")),
            chat_burst=int(env.get("VIDEOCOPIES_TELEGRAM_CHAT_BURST", "2")),
        )


@attrs.define
class Bucket:
    """A token bucket; `free_at` says when the next token is there."""

    rate: float
    burst: int
    tokens: float
    at: float

    def refill(self, now: float) -> None:
        self.tokens = min(float(self.burst), self.tokens + (now - self.at) * self.rate)
        self.at = now

    def free_at(self, now: float) -> float:
        self.refill(now)
        return now if self.tokens >= 1.0 else now + (1.0 - self.tokens) / self.rate

    def take(self, now: float) -> None:
        self.refill(now)
        self.tokens -= 1.0


class Pacer:
    """Admits one send at a time per call of `admit`; `pause` holds every send for a while."""

    def __init__(self, settings: PacingSettings | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.settings = settings or PacingSettings()
        self._clock = clock
        now = clock()
        self._bot = Bucket(self.settings.bot_rate, self.settings.bot_burst, float(self.settings.bot_burst), now)
        self._chats: dict[int, Bucket] = {}
        self._paused_until = 0.0
        self._lock = asyncio.Lock()
        self.pauses = 0

    def chat_ready_at(self, chat_id: int) -> float:
        """When this chat may be sent to next, by its own bucket and the pause (not the bot's)."""
        now = self._clock()
        bucket = self._chats.get(chat_id)
        ready = now if bucket is None else bucket.free_at(now)
        return max(ready, self._paused_until)

    def pause(self, seconds: float) -> None:
        """Telegram said 429: nothing is sent until its window has closed."""
        until = self._clock() + seconds
        if until > self._paused_until:
            self._paused_until = until
            self.pauses += 1

    @property
    def paused_until(self) -> float:
        return self._paused_until

    async def admit(self, chat_id: int) -> None:
        """Wait until one message may go to this chat, and count it."""
        async with self._lock:  # one waiter at a time keeps the bot's bucket in arrival order
            while True:
                now = self._clock()
                chat = self._chats.get(chat_id)
                if chat is None:
                    chat = self._chats[chat_id] = Bucket(
                        self.settings.chat_rate, self.settings.chat_burst, float(self.settings.chat_burst), now
                    )
                ready = max(self._bot.free_at(now), chat.free_at(now), self._paused_until)
                if ready <= now:
                    self._bot.take(now)
                    chat.take(now)
                    self._forget_idle(now)
                    return
                await asyncio.sleep(ready - now)

    def _forget_idle(self, now: float) -> None:
        if len(self._chats) > 4096:  # full buckets carry no memory worth keeping
            for chat_id in [c for c, b in self._chats.items() if b.free_at(now) <= now and b.tokens >= b.burst]:
                del self._chats[chat_id]
