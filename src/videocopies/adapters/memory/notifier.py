"""Wake-ups within one process: set on new work, awaited by waiting claimers."""

from __future__ import annotations

import asyncio
import contextlib


class InProcessNotifier:
    def __init__(self) -> None:
        self._event = asyncio.Event()
        self.wakeups = 0

    def job_available(self) -> None:
        self.wakeups += 1
        self._event.set()

    async def wait(self, timeout: float) -> bool:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._event.wait(), timeout)
        woke, _ = self._event.is_set(), self._event.clear()
        return woke
