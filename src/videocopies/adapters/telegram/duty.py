"""Edge polls Telegram and sends the outbox only while core grants it that duty, so two
edges can run and the second takes over when the first dies (Telegram allows one poller,
and one sender keeps each chat's messages in order).

The lease is counted on this machine's own clock from the moment each request left, minus
a margin: the work stops before core could hand the duty to another edge, whatever the
clocks say and however slow the answer was.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from videocopies.adapters.http.client import CoreClient

log = logging.getLogger(__name__)
PATH = "/v1/duties/poll-telegram"


class PollingDuty:
    def __init__(
        self, core: CoreClient, token: str, margin_s: float = 1.5, standby_poll_s: float = 1.0,
        stats: Callable[[], dict[str, int]] | None = None,
    ) -> None:
        self._core, self._token, self._margin_s, self._standby_s = core, token, margin_s, standby_poll_s
        self._stats = stats  # edge's counters, shown by core in /metrics
        self.terms = 0  # how many times this edge took the duty

    async def run(self, stop: asyncio.Event, work: Callable[[asyncio.Event], Awaitable[Any]]) -> None:
        """Run `work` while the duty is ours; `work` must return soon after its event is set."""
        waiting_for = None
        while not stop.is_set():
            asked = time.monotonic()
            answer = await self._ask(None)
            if answer is None or not answer["held"]:
                holder = answer["holder"] if answer else "core unreachable"
                if holder != waiting_for:
                    log.info("standing by: the duty is held (%s)", holder)
                    waiting_for = holder
                await _sleep_unless(stop, self._standby_s)
                continue
            waiting_for = None
            self.terms += 1
            log.info("polling Telegram (term %d)", answer["term"])
            await self._hold(stop, work, asked + answer["ttl_s"] - self._margin_s, answer["ttl_s"])

    async def _hold(
        self, stop: asyncio.Event, work: Callable[[asyncio.Event], Awaitable[Any]], deadline: float, ttl_s: float
    ) -> None:
        lapse = asyncio.Event()
        task = asyncio.ensure_future(work(lapse))
        try:
            while not stop.is_set() and not task.done():
                await _sleep_unless(stop, min(ttl_s / 3, max(0.0, deadline - time.monotonic())), task)
                if stop.is_set() or task.done():
                    break
                asked = time.monotonic()
                answer = await self._ask(deadline)
                if answer is not None and answer["held"]:
                    deadline = asked + answer["ttl_s"] - self._margin_s
                elif answer is not None:
                    log.warning("the duty went to %s: stopping", answer["holder"])
                    break
                if time.monotonic() >= deadline:
                    log.warning("could not renew the duty in time: stopping")
                    break
        finally:
            lapse.set()
            await task

    async def _ask(self, deadline: float | None) -> dict[str, Any] | None:
        budget = None if deadline is None else max(0.1, deadline - time.monotonic())
        try:
            body: dict[str, Any] = {"token": self._token}
            if self._stats is not None:
                body["stats"] = self._stats()
            return await asyncio.wait_for(self._core.call("POST", PATH, body), budget)
        except Exception as error:  # noqa: BLE001 - unreachable or slow: decided by the deadline
            log.warning("duty request failed: %r", error)
            return None


async def _sleep_unless(stop: asyncio.Event, seconds: float, task: asyncio.Future[Any] | None = None) -> None:
    waiting = [asyncio.ensure_future(stop.wait())]
    if task is not None:
        waiting.append(task)  # type: ignore[arg-type]
    with contextlib.suppress(TimeoutError):
        await asyncio.wait(waiting, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
    waiting[0].cancel()
