"""How core, edge, a worker and control run their main loop. No web package is imported here:
a worker loads none (tests/unit/adapters/test_worker_footprint.py)."""

from __future__ import annotations

import signal
from collections.abc import Coroutine
from typing import Any, TypeVar

import uvloop

T = TypeVar("T")


def run_role(main: Coroutine[Any, Any, T]) -> T:
    """The role's main loop. Once it has stopped, a SIGTERM sent again (a supervisor asking twice)
    is ignored: the handlers that caught the first are gone by then (uvicorn's restored, the
    loop's removed as it closes), and it would turn a clean stop into death by the signal
    (exit -15) while the loop and then the interpreter shut down."""
    try:
        return uvloop.run(_deaf_when_done(main))
    finally:
        _ignore_sigterm()  # again: closing the loop set its handled signals back to the default


async def _deaf_when_done(main: Coroutine[Any, Any, T]) -> T:
    try:
        return await main
    finally:
        _ignore_sigterm()


def _ignore_sigterm() -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
