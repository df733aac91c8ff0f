"""Buttons that lapse: a sent quote's Confirm means nothing once its price expires, so core takes
it off the user's screen then, whichever edge sent the quote and whether or not it still runs.

Core keeps each sent quote's Telegram message (learnt from the delivery report) until the quote's
`expires_at`; then one sweep queues an `unbutton` message for it, in the transaction that forgets
it, and the edge that claims that message takes the buttons off. A press that took them off
already (a confirmed quote) forgets the message when its reply is reported sent."""

from __future__ import annotations

import asyncio
import contextlib
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


async def keep_lapsing(
    lapse: Callable[[datetime, int], Awaitable[int]], clock: Clock, stop: asyncio.Event, every_s: float = 1.0,
    queued: Callable[[], None] = lambda: None, batch: int = 100,
) -> None:
    """Every `every_s`, the buttons that lapsed are given to edge to take off (`queued` wakes the
    senders). Safe on every core: two sweeps split the rows, none is taken twice."""
    while not stop.is_set():
        try:
            total = 0
            while (lapsed := await lapse(clock.now(), batch)) > 0:
                total += lapsed
                if lapsed < batch:
                    break
            if total:
                log.info("%d messages' buttons lapsed", total)
                queued()
        except Exception as error:  # noqa: BLE001 - the database may be away: the next pass takes them
            log.warning("lapsed buttons not queued: %r", error)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), every_s)
