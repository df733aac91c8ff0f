"""A worker process's rounds until SIGTERM or SIGINT: a parked claim is abandoned at once, a job
in hand is finished (the worker gives it back on stop), as is one claimed with the last
completion, and a failed round is tried again after a pause."""

from __future__ import annotations

import asyncio
import logging
import signal
from typing import Protocol

log = logging.getLogger("videocopies.worker")


class Rounds(Protocol):
    busy: bool

    async def run_once(self) -> object: ...

    async def give_back(self) -> None: ...

    def stop(self) -> None: ...


async def work_until_stopped(worker: Rounds, pause_s: float = 1.0) -> None:
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()

    def stop() -> None:
        stopping.set()
        worker.stop()

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop)
    while not stopping.is_set():
        polling = asyncio.ensure_future(worker.run_once())
        stopped = asyncio.ensure_future(stopping.wait())
        await asyncio.wait([polling, stopped], return_when=asyncio.FIRST_COMPLETED)
        stopped.cancel()
        if not polling.done() and worker.busy:
            await polling  # the worker is finishing its job (given back on stop)
        elif not polling.done():
            polling.cancel()
            await asyncio.gather(polling, return_exceptions=True)
        elif polling.exception() is not None:
            log.warning("worker round failed: %r", polling.exception())
            await asyncio.sleep(pause_s)
    try:  # a stop that came between two rounds finds a job claimed with the last completion
        await worker.give_back()
    except Exception as error:  # noqa: BLE001 - its lease runs out and another worker takes it
        log.warning("could not give back a job claimed with the last completion: %r", error)
