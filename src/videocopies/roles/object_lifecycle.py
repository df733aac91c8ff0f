"""Core's object lifecycle duty: one core at a time (under the duty lease) deletes sources and
copies whose time is up and sweeps strays, every VIDEOCOPIES_OBJECTS_SWEEP_S; see
application/objects.py. A store or database that is away only makes a pass fail: the next
one tries again."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import socket
from collections.abc import Callable
from datetime import timedelta

from videocopies.application.duties import HoldDuty
from videocopies.application.objects import ObjectLifecycle, SweepResult
from videocopies.application.ports import Clock

log = logging.getLogger(__name__)

OBJECTS_DUTY = "object-lifecycle"


def duty_ttl(every_s: float, duty_ttl: timedelta) -> timedelta:
    """Renewed once a pass: the lease outlives two passes, so a slow pass is not taken over
    while it runs, and a dead holder is replaced within two passes."""
    return max(duty_ttl, timedelta(seconds=2 * every_s + 5))


async def keep_sweeping(
    lifecycle: ObjectLifecycle, hold: HoldDuty, clock: Clock, stop: asyncio.Event, every_s: float,
    swept: Callable[[SweepResult], None] = lambda result: None,
) -> None:
    holder, token = f"core@{socket.gethostname()}:{os.getpid()}", secrets.token_hex(16)
    while not stop.is_set():
        try:
            lease = await hold(OBJECTS_DUTY, holder, token)
            if lease.held_with(token, clock.now()):
                result = await lifecycle()
                swept(result)
                if result.anything:
                    log.info("objects: deleted %s, %d deletes failed, %d rows forgotten",
                             result.deleted, result.failed, result.forgotten)
        except Exception as error:  # noqa: BLE001 - storage or database down: the next pass tries again
            log.warning("object lifecycle pass failed: %r", error)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), every_s)
