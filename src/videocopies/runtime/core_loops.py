"""The loops a core process keeps running beside its API, each until `stop` is set: the lease
and coin sweep, reconciliation with the payment provider, and the object lifecycle duty (one
core at a time, under the duty lease, deletes sources and copies whose time is up and sweeps
strays; see application/objects.py). A database, provider or store that is away only makes a
pass fail: the next one tries again.

With several cores on one database, reconciliation and the object lifecycle run under a duty
lease each (one core at a time); the sweep runs on every core, which is safe: it takes lapsed
leases with `FOR UPDATE SKIP LOCKED` and a state check, and expires coins under the account's
optimistic lock, so two cores sweeping at once split the rows, never touch one twice."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import socket
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

from videocopies.application.duties import HoldDuty
from videocopies.application.objects import ObjectLifecycle, SweepResult
from videocopies.application.ports import Clock

log = logging.getLogger("videocopies.core")

OBJECTS_DUTY = "object-lifecycle"
RECONCILE_DUTY = "reconcile-payments"


def holder() -> str:
    """How this process names itself when it holds a duty."""
    return f"core@{socket.gethostname()}:{os.getpid()}"


async def pause(stop: asyncio.Event, seconds: float) -> None:
    """Wait `seconds`, or less when `stop` is set meanwhile."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), seconds)


async def sweep(
    expire_leases: Callable[[], Awaitable[int]], expire_coins: Callable[[], Awaitable[int]], stop: asyncio.Event,
    every_s: float = 1.0, coins_every_s: float = 60.0, lapsed: Callable[[], Awaitable[bool]] | None = None,
    leases_expired: Callable[[int], None] = lambda count: None,
) -> None:
    """Leases that ran out go back to the queue every `every_s`; expired coin lots close every
    `coins_every_s`. With `lapsed`, the sweep glances first and opens a transaction only when
    some lease has run out."""
    coins_every = max(1, round(coins_every_s / every_s))
    ticks = 0
    while not stop.is_set():
        try:
            if (lapsed is None or await lapsed()) and (expired := await expire_leases()):
                log.info("took back %d expired leases", expired)
                leases_expired(expired)
            if ticks % coins_every == 0 and (coins := await expire_coins()):
                log.info("expired %d coins", coins)
        except Exception as error:  # noqa: BLE001 - a database restart must not stop the sweeps
            log.warning("sweep failed: %r", error)
        ticks += 1
        await pause(stop, every_s)


async def reconcile_payments(
    reconcile: Callable[[], Awaitable[Any]], stop: asyncio.Event, every_s: float,
    queued: Callable[[], None] = lambda: None, held: Callable[[], Awaitable[bool]] | None = None,
) -> None:
    """Reconciliation with the payment provider every `every_s`: payments whose notification
    was lost are credited, refunds left pending finished; `queued` wakes the senders. With
    `held`, a pass runs only while it says this core holds the duty."""
    while not stop.is_set():
        await pause(stop, every_s)
        if stop.is_set():
            return
        try:
            if held is not None and not await held():
                continue
            result = await reconcile()
        except Exception as error:  # noqa: BLE001 - the provider or the database may be away
            log.warning("reconciliation failed: %r", error)
            continue
        queued()
        if not result.report.clean:
            log.info("reconciliation: %s", "; ".join(result.lines()))


def duty_ttl(every_s: float, duty_ttl: timedelta) -> timedelta:
    """Renewed once a pass: the lease outlives two passes, so a slow pass is not taken over
    while it runs, and a dead holder is replaced within two passes."""
    return max(duty_ttl, timedelta(seconds=2 * every_s + 5))


def holding(hold: HoldDuty, duty: str, token: str, clock: Clock) -> Callable[[], Awaitable[bool]]:
    """Asks for `duty` (renewing it when this core holds it): True while it is this core's."""
    name = holder()

    async def held() -> bool:
        return (await hold(duty, name, token)).held_with(token, clock.now())

    return held


async def keep_sweeping(
    lifecycle: ObjectLifecycle, hold: HoldDuty, clock: Clock, stop: asyncio.Event, every_s: float,
    swept: Callable[[SweepResult], None] = lambda result: None, token: str | None = None,
) -> None:
    """The object lifecycle every `every_s`, while this process holds its duty."""
    name, token = holder(), token or secrets.token_hex(16)
    while not stop.is_set():
        try:
            lease = await hold(OBJECTS_DUTY, name, token)
            if lease.held_with(token, clock.now()):
                result = await lifecycle()
                swept(result)
                if result.anything:
                    log.info("objects: deleted %s, %d deletes failed, %d rows forgotten",
                             result.deleted, result.failed, result.forgotten)
        except Exception as error:  # noqa: BLE001 - storage or database down: the next pass tries again
            log.warning("object lifecycle pass failed: %r", error)
        await pause(stop, every_s)
