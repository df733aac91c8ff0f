"""How fast edge may send: Telegram's flood control, obeyed before it refuses.

Telegram takes about 30 messages a second from one bot and about one a second in one chat,
short bursts allowed; past that it answers 429 with `retry_after`, and refuses every send
inside that window again. The maintained clients treat a 429 as covering the whole bot, and
so does this pacer: one refusal pauses every send until the window closes. Buckets are a
little stricter than Telegram's so that clock jitter between the two never tips a send over.

Replies to what a user just did are urgent: they go before any copy waiting for its turn,
and copies never spend the last `reply_reserve` tokens of the bot's bucket, so a burst of
newcomers is welcomed at once even while a backlog of copies uses the whole rate.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import attrs

RECOVER_S = 10.0


@attrs.frozen
class PacingSettings:
    bot_rate: float = 30.0  # messages per second, whole bot
    bot_burst: int = 25  # Telegram's own is about 30
    reply_reserve: int = 15  # tokens of the bot's bucket that only replies spend
    chat_rate: float = 1.0  # messages per second, one chat
    chat_burst: int = 2

    def __attrs_post_init__(self) -> None:
        if not 0 <= self.reply_reserve < self.bot_burst:
            raise ValueError("the reply reserve must be smaller than the bot's burst")


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

    def free_at(self, now: float, keep: int = 0) -> float:
        """When a token is there beyond the `keep` left for others."""
        self.refill(now)
        need = 1.0 + keep
        return now if self.tokens >= need else now + (need - self.tokens) / self.rate

    def take(self, now: float) -> None:
        self.refill(now)
        self.tokens -= 1.0


class Pacer:
    """Admits sends; `pause` holds every send for a while. Callers send to a chat only when
    `chat_ready_at` says its own bucket allows (the sender's dispatcher does)."""

    def __init__(self, settings: PacingSettings | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.settings = settings or PacingSettings()
        self._clock = clock
        now = clock()
        self._bot = Bucket(self.settings.bot_rate, self.settings.bot_burst, float(self.settings.bot_burst), now)
        self._chats: dict[int, Bucket] = {}
        self._paused_until = 0.0
        self._slowed_at = 0.0
        self._urgent_waiting = 0
        self._no_urgent = asyncio.Event()
        self._no_urgent.set()
        self.pauses = 0

    def chat_ready_at(self, chat_id: int) -> float:
        """When this chat may be sent to next, by its own bucket and the pause (not the bot's)."""
        now = self._clock()
        bucket = self._chats.get(chat_id)
        ready = now if bucket is None else bucket.free_at(now)
        return max(ready, self._paused_until)

    def pause(self, seconds: float) -> None:
        """Telegram said 429: nothing is sent until its window has closed, and then at half
        the rate, from an empty bucket (no burst into the next window); the rate comes back
        a quarter at a time for every `RECOVER_S` without a 429."""
        now = self._clock()
        until = now + seconds
        if until > self._paused_until:
            self._paused_until = until
            self.pauses += 1
            self._bot.refill(now)
            self._bot.tokens, self._bot.at = 0.0, until
            self._bot.rate = max(1.0, self._bot.rate / 2)
            self._slowed_at = until

    def _recover(self, now: float) -> None:
        if self._bot.rate >= self.settings.bot_rate or now - self._slowed_at < RECOVER_S:
            return
        steps = int((now - self._slowed_at) // RECOVER_S)
        self._bot.refill(now)
        self._bot.rate = min(self.settings.bot_rate, self._bot.rate * 1.25**steps)
        self._slowed_at += steps * RECOVER_S

    @property
    def paused_until(self) -> float:
        return self._paused_until

    async def admit(self, chat_id: int, urgent: bool = True) -> None:
        """Wait until one message may go to this chat, and count it. A copy (`urgent` False)
        also waits while any reply waits, and leaves the reply reserve alone."""
        if urgent:
            self._urgent_waiting += 1
            self._no_urgent.clear()
        try:
            while True:
                if not urgent and self._urgent_waiting:
                    await self._no_urgent.wait()
                    continue
                now = self._clock()
                self._recover(now)
                chat = self._chats.get(chat_id)
                if chat is None:
                    chat = self._chats[chat_id] = Bucket(
                        self.settings.chat_rate, self.settings.chat_burst, float(self.settings.chat_burst), now
                    )
                keep = 0 if urgent else self.settings.reply_reserve
                ready = max(self._bot.free_at(now, keep), chat.free_at(now), self._paused_until)
                if ready <= now:  # checked and taken in one step: no other waiter runs in between
                    self._bot.take(now)
                    chat.take(now)
                    self._forget_idle(now)
                    return
                await asyncio.sleep(ready - now)
        finally:
            if urgent:
                self._urgent_waiting -= 1
                if not self._urgent_waiting:
                    self._no_urgent.set()

    def _forget_idle(self, now: float) -> None:
        if len(self._chats) > 4096:  # full buckets carry no memory worth keeping
            for chat_id in [c for c, b in self._chats.items() if b.free_at(now) <= now and b.tokens >= b.burst]:
                del self._chats[chat_id]
