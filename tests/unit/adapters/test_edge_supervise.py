"""Edge's loops are started again when they fail, with a growing pause, and counted."""

from __future__ import annotations

import asyncio
from collections import Counter

from videocopies.adapters.telegram.supervise import supervised


async def test_a_failing_loop_is_started_again_and_counted_until_stopped() -> None:
    stop = asyncio.Event()
    restarts: Counter[str] = Counter()
    runs = 0

    async def flaky(stopping: asyncio.Event) -> None:
        nonlocal runs
        runs += 1
        if runs <= 3:
            raise RuntimeError("an update nobody expected")
        stop.set()

    await asyncio.wait_for(supervised("receive", flaky, stop, restarts, first_pause_s=0.01), 5)
    assert runs == 4 and restarts == Counter({"receive": 3})


async def test_a_loop_that_returns_while_not_stopped_is_started_again() -> None:
    stop = asyncio.Event()
    restarts: Counter[str] = Counter()
    runs = 0

    async def quits(stopping: asyncio.Event) -> None:
        nonlocal runs
        runs += 1
        if runs == 2:
            stop.set()

    await asyncio.wait_for(supervised("send", quits, stop, restarts, first_pause_s=0.01), 5)
    assert runs == 2 and restarts["send"] == 1
