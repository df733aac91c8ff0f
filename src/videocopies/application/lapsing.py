"""Buttons that lapse: a sent quote's Confirm means nothing once its price expires, so core takes
it off the user's screen then, whichever edge sent the quote and whether or not it still runs.

Core keeps each sent quote's Telegram message (learnt from the delivery report) until the quote's
`expires_at`; then one sweep queues an `unbutton` message for it, in the transaction that forgets
it, and the edge that claims that message takes the buttons off. A press that took them off
already (a confirmed quote) forgets the message when its reply is reported sent."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime
from typing import Any

from videocopies.application.ports import Clock, OutboxMessage
from videocopies.domain.shared import UserId

log = logging.getLogger(__name__)

UNBUTTON = "unbutton"  # the outbox kind: take the buttons off message `payload["unbutton"]`, send nothing


def buttons_until(kind: str, payload: Mapping[str, Any]) -> datetime | None:
    """When a message's buttons stop meaning anything: a quote's Confirm, when its price expires."""
    if kind != "screen" or payload.get("screen") != "quote" or not payload.get("expires_at"):
        return None
    return datetime.fromisoformat(str(payload["expires_at"]))


def unbutton_message(user_id: int, message_id: int) -> OutboxMessage:
    """The outbox message that takes the lapsed buttons off Telegram message `message_id`."""
    return OutboxMessage(UserId(user_id), UNBUTTON, {UNBUTTON: message_id}, f"lapsed:{user_id}:{message_id}")


class LapseAlarm:
    """Wakes the sweep sooner than it planned: rung when a message is recorded sent whose buttons
    lapse (by the outbox queue of the core the report came to)."""

    def __init__(self) -> None:
        self.rung = asyncio.Event()

    def noticed(self, lapses_at: datetime) -> None:
        self.rung.set()


async def keep_lapsing(
    lapse: Callable[[datetime, int], Awaitable[int]], next_lapse: Callable[[], Awaitable[datetime | None]],
    clock: Clock, stop: asyncio.Event, every_s: float = 1.0, longest_s: float = 30.0,
    alarm: LapseAlarm | None = None, queued: Callable[[], None] = lambda: None, batch: int = 100,
    counted: Callable[[int], None] = lambda lapsed: None,
) -> None:
    """The buttons that lapsed are given to edge to take off (`queued` wakes the senders, `counted`
    is told how many, for core's /metrics), then the sweep sleeps until the next lapse it knows
    of, at most `longest_s`, or until `alarm` rings (a quote was just sent here), and never
    passes more than once an `every_s`. So an idle core reads once a `longest_s` rather than once
    a second (the Job API's idle figure counts every statement). A quote reported to another core
    is seen within `longest_s`, and the quote's own lifetime is longer. Safe on every core: two
    sweeps split the rows, none is taken twice."""
    loop = asyncio.get_running_loop()
    while not stop.is_set():
        began, wait = loop.time(), every_s
        if alarm is not None:
            alarm.rung.clear()  # a ring during this pass is kept for the wait below
        try:
            due = await next_lapse()  # a glance: the sweep's transaction only when something is due
            if due is not None and due <= clock.now():
                total = 0
                while (lapsed := await lapse(clock.now(), batch)) > 0:
                    total += lapsed
                    if lapsed < batch:
                        break
                if total:
                    log.info("%d messages' buttons lapsed", total)
                    counted(total)
                    queued()
                due = await next_lapse()
            until = longest_s if due is None else (due - clock.now()).total_seconds()
            wait = min(longest_s, max(every_s, until))
        except Exception as error:  # noqa: BLE001 - the database may be away: the next pass takes them
            log.warning("lapsed buttons not queued: %r", error)
        await _until_due(stop, alarm, wait)
        await _until_due(stop, None, began + every_s - loop.time())  # at most one pass an every_s


async def _until_due(stop: asyncio.Event, alarm: LapseAlarm | None, wait_s: float) -> None:
    if wait_s <= 0 or stop.is_set():
        return
    waits = [asyncio.ensure_future(stop.wait())]
    if alarm is not None:
        waits.append(asyncio.ensure_future(alarm.rung.wait()))
    try:
        await asyncio.wait(waits, timeout=wait_s, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiting in waits:
            waiting.cancel()
