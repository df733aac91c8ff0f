"""A wake-up signal that works across threads and event loops (the server may run in its own thread)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def _wake(future: asyncio.Future) -> None:
    if not future.done():
        future.set_result(None)


class Signal:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future]] = []

    def notify(self) -> None:
        with self._lock:
            waiters, self._waiters = self._waiters, []
        for loop, future in waiters:
            if not loop.is_closed():
                loop.call_soon_threadsafe(_wake, future)

    async def wait_for(self, check: Callable[[], T | None], timeout: float) -> T | None:
        """Return the first non-None `check()`, re-checked on every notify, or None after `timeout`."""
        deadline = time.monotonic() + timeout
        loop = asyncio.get_running_loop()
        while True:
            future = loop.create_future()
            with self._lock:  # registered before checking, so a notify in between is not lost
                self._waiters.append((loop, future))
            try:
                result = check()
                remaining = deadline - time.monotonic()
                if result is not None or remaining <= 0:
                    return result
                await asyncio.wait_for(future, remaining)
            except TimeoutError:
                pass
            finally:
                self._forget(loop, future)

    def _forget(self, loop: asyncio.AbstractEventLoop, future: asyncio.Future) -> None:
        future.cancel()
        with self._lock:
            if (loop, future) in self._waiters:
                self._waiters.remove((loop, future))
