"""Wake-ups within one process: announced on new work, awaited by waiting claimers."""

from __future__ import annotations

import asyncio
import contextlib


class InProcessNotifier:
    """Every announcement starts a new generation; a waiter holding an older ticket wakes."""

    def __init__(self) -> None:
        self.wakeups = 0
        self._generation = 0
        self._changed: asyncio.Event | None = None

    def job_available(self) -> None:
        self.wakeups += 1
        self._generation += 1
        if self._changed is not None:
            self._changed.set()
            self._changed = None

    def ticket(self) -> int:
        return self._generation

    async def wait(self, ticket: int, timeout: float) -> bool:
        if self._generation != ticket:
            return True
        if self._changed is None:
            self._changed = asyncio.Event()
        changed = self._changed
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(changed.wait(), timeout)
        return self._generation != ticket
