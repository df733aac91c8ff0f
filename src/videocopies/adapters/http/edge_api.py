"""Core's API for edge: the inbox it stores updates in, and the outbox it sends from
(edge_inbox.py and edge_outbox.py hold the routes, edge_models.py the bodies).

Edge stores every update here before it advances its Telegram offset; storing is idempotent
by update id. It takes outbox messages rendered in the user's language, sends them, and
reports each one: a copy is charged when its delivery is reported, once.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime, timedelta
from typing import Any

import attrs

from videocopies.adapters.http.metrics import CoreMetrics
from videocopies.adapters.postgres.outbox import PostgresOutboxQueue
from videocopies.application import use_cases as uc
from videocopies.application.duties import HoldDuty
from videocopies.application.ports import Clock, Inbox, ObjectStore, QueuedMessage
from videocopies.domain.payments import DEFAULT_PACKAGES, PackageCatalog


class OutboxNews:
    """Wakes waiting outbox claims: set in-process when something was queued; a slow glance
    at the table covers news from other processes."""

    def __init__(self, glance: Callable[[], Awaitable[bool]], glance_every_s: float = 5.0) -> None:
        self._glance, self._every = glance, glance_every_s
        self._event = asyncio.Event()
        self._closing = False

    def queued(self) -> None:
        self._event.set()

    def close(self) -> None:
        """Core is stopping: waiting claims are answered now, not after their wait (a graceful
        stop would otherwise wait out every long poll)."""
        self._closing = True
        self._event.set()

    async def wait(self, timeout: float) -> bool:
        """True when something may be there to claim."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not self._closing:
            remaining = deadline - loop.time()
            if remaining <= 0:
                return False
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._event.wait(), min(remaining, self._every))
            if self._event.is_set():
                self._event.clear()
                return True
            if await self._glance():
                return True
        return False


@attrs.frozen
class EdgeApiServices:
    inbox: Inbox
    inbox_added: Callable[[], None]
    outbox: PostgresOutboxQueue
    news: OutboxNews
    languages: Callable[[Sequence[int]], Awaitable[dict[int, str]]]
    record_delivery: Callable[[uc.RecordDeliveryCommand], Awaitable[int]]
    give_up_delivery: Callable[[uc.RecordDeliveryCommand], Awaitable[int]]
    store: ObjectStore | None
    clock: Clock
    url_ttl: timedelta = timedelta(minutes=15)
    metrics: CoreMetrics = attrs.field(factory=CoreMetrics)
    hold_duty: HoldDuty | None = None  # None: this core grants no duties
    packages: PackageCatalog = DEFAULT_PACKAGES
    # Messages that will never be sent are closed through this (a copy among them is not
    # charged); None: only copies are given up, one by one, as before.
    give_up_messages: Callable[[Sequence[QueuedMessage], str], Awaitable[int]] | None = None
    # A user Telegram will not deliver to (blocked, chat not found): their orders stop.
    stop_serving: Callable[[uc.StopServingUserCommand], Awaitable[Any]] | None = None
    max_attempts: int = 8  # claims of one message before it is given up
    per_user: int = 3  # messages of one user in one claim
    keep_unreadable: Callable[[Sequence[tuple[int, str]], datetime], Awaitable[int]] | None = None
