"""Edge's loops run supervised: a loop that fails is started again after a pause that grows
with each failure in a row, and every restart is counted. Nothing a user sends, and no
answer Telegram or core gives, may end the process."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import TypeVar

log = logging.getLogger(__name__)
T = TypeVar("T")


async def supervised(
    name: str, run: Callable[[asyncio.Event], Awaitable[object]], stop: asyncio.Event, restarts: Counter[str],
    first_pause_s: float = 0.5, longest_pause_s: float = 30.0, healthy_after_s: float = 60.0,
) -> None:
    """Run `run(stop)` until it returns with `stop` set; restart it whenever it fails."""
    pause = first_pause_s
    while not stop.is_set():
        started = time.monotonic()
        try:
            await run(stop)
        except Exception:  # noqa: BLE001 - the whole point: log, count, start again
            log.exception("edge loop %s failed; starting it again in %.1f s", name, pause)
            restarts[name] += 1
        else:
            if stop.is_set():
                return
            log.warning("edge loop %s returned without being stopped; starting it again", name)
            restarts[name] += 1
        if time.monotonic() - started > healthy_after_s:
            pause = first_pause_s
        await sleep_unless(stop, pause)
        pause = min(longest_pause_s, pause * 2)


async def sleep_unless(stop: asyncio.Event, seconds: float) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), seconds)


async def racing(work: Awaitable[T], rival: Awaitable[object], timeout: float | None = None) -> asyncio.Future[T]:
    """Run `work` until it or `rival` ends, or `timeout` passes; returns its task, done or
    cancelled. What is still running is cancelled and waited for."""
    task, other = asyncio.ensure_future(work), asyncio.ensure_future(rival)
    try:
        await asyncio.wait({task, other}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        other.cancel()
        if not task.done():
            task.cancel()
        await asyncio.gather(task, other, return_exceptions=True)
    return task


async def until_stopped(stop: asyncio.Event, work: Awaitable[T]) -> T | None:
    """The result of `work`, or None when `stop` is set first (the work is cancelled)."""
    task = await racing(work, stop.wait())
    return None if task.cancelled() else task.result()


async def first_of(stop: asyncio.Event, waiting: Awaitable[object], timeout: float | None = None) -> None:
    """Wait for `waiting`, `stop`, or the timeout, whichever comes first."""
    await racing(waiting, stop.wait(), timeout)
