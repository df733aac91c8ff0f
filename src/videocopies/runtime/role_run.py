"""How core, edge, a worker and control run their main loop. No web package is imported here:
a worker loads none (tests/unit/adapters/test_worker_footprint.py).

A role stops cleanly (exit 0) on SIGTERM at any moment of its life after `hold_stops()`:
- while it is starting (importing, reading its settings, before it listens itself), the stop is
  held and handed to the role the moment it listens, or, if it does not listen within
  `LISTEN_GRACE_S`, its start is cancelled;
- while it runs, its own handlers stop it;
- once it has stopped, a SIGTERM sent again is ignored.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import time
from collections.abc import Coroutine
from types import FrameType
from typing import Any, TypeVar

import uvloop

T = TypeVar("T")
log = logging.getLogger(__name__)

# How long a stop asked while starting waits for the role to listen before its start is cancelled:
# core and control listen as their server starts, a worker and edge once core has answered them.
LISTEN_GRACE_S = 3.0
_POLL_S = 0.01

_held: list[float] = []  # when a stop was held, if one was


def _hold(signum: int, frame: FrameType | None) -> None:
    if not _held:
        _held.append(time.monotonic())


def hold_stops() -> None:
    """From now until the role's loop listens, a SIGTERM is held instead of killing the process:
    its imports and settings take a second or two, and a supervisor may stop it in that time."""
    _held.clear()
    signal.signal(signal.SIGTERM, _hold)


def run_role(main: Coroutine[Any, Any, T]) -> T | None:
    """The role's main loop; None when it was stopped before it started serving. Once it has
    stopped, a SIGTERM sent again (a supervisor asking twice) is ignored: the handlers that caught
    the first are gone by then (uvicorn's restored, the loop's removed as it closes), and it would
    turn a clean stop into death by the signal (exit -15) while the loop and then the
    interpreter shut down."""
    try:
        return uvloop.run(_deaf_when_done(main))
    finally:
        _ignore_sigterm()  # again: closing the loop set its handled signals back to the default


async def _deaf_when_done(main: Coroutine[Any, Any, T]) -> T | None:
    try:
        if _held:
            main.close()
            log.info("stopped before it started")
            return None
        serving = asyncio.ensure_future(main)
        watching = asyncio.ensure_future(_hand_over_held_stop(serving))
        try:
            return await serving
        except asyncio.CancelledError:
            if not serving.cancelled():
                raise
            log.info("stopped while starting")
            return None
        finally:
            watching.cancel()
    finally:
        _ignore_sigterm()


async def _hand_over_held_stop(serving: asyncio.Future[Any]) -> None:
    """Until the role listens itself: a stop held meanwhile is sent again once it listens, or its
    start is cancelled if it has not listened within the grace."""
    while signal.getsignal(signal.SIGTERM) is _hold:
        if _held and time.monotonic() - _held[0] >= LISTEN_GRACE_S:
            serving.cancel()
            return
        await asyncio.sleep(_POLL_S)
    if _held:
        os.kill(os.getpid(), signal.SIGTERM)


def _ignore_sigterm() -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
