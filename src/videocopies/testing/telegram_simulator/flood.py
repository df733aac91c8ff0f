"""Telegram's flood control as the simulator plays it: token buckets, and the window a 429 opens.

A bucket holds up to `burst` sends and refills at `rate` a second; a send without a token is
refused with 429 and `retry_after` = the whole seconds until one is back (at least 1, as Telegram
never answers 0). That refusal opens a window for its scope (the chat, or the whole bot) until
`retry_after` is up: every send inside it is refused again, and a sender that does so has broken
the rule every maintained client library keeps (wait the whole `retry_after`)."""

from __future__ import annotations

import math

from videocopies.testing.telegram_simulator.errors import BotApiError


class Bucket:
    __slots__ = ("tokens", "at", "open_until")

    def __init__(self) -> None:
        self.tokens = math.inf  # full, whatever the burst: capped at the first refill
        self.at = 0.0
        self.open_until = 0.0

    def wait(self, now: float, burst: int, rate: float) -> float:
        """Seconds until a token is there (0.0: there is one now), after refilling up to `now`."""
        tokens = self.tokens + (now - self.at) * rate
        if tokens > burst:
            tokens = burst
        self.tokens, self.at = tokens, now
        return 0.0 if tokens >= 1.0 else (1.0 - tokens) / rate


def retry_after(seconds: float) -> int:
    # The epsilon keeps 1.0000000001 (float noise in a refill) from becoming 2 seconds.
    return max(1, math.ceil(seconds - 1e-9))


def too_many_requests(retry: int) -> BotApiError:
    return BotApiError(429, f"Too Many Requests: retry after {retry}", retry_after=retry)
