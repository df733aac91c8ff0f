"""What a worker tells core while a copy renders: how far it is, for the user's progress message.

FFmpeg reports many times a second; core hears the newest figure at most every `every_s`, and
only when it moved. A report that fails is not retried: the next one carries a newer figure."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from videocopies.application.ports import ClaimedJob, JobLeases

log = logging.getLogger(__name__)


class ProgressReports:
    def __init__(self, leases: JobLeases, job: ClaimedJob, every_s: float = 2.5) -> None:
        self._leases, self._job, self._every_s = leases, job, every_s
        self._figure: tuple[int, int] | None = None  # copy index, percent
        self._told: tuple[int, int] | None = None

    def of_copy(self, index: int) -> Callable[[float], None]:
        """The callback a render of copy `index` reports its fraction done to."""
        def seen(fraction: float) -> None:
            self._figure = (index, max(0, min(100, int(fraction * 100))))
        seen(0.0)
        return seen

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self._every_s)
            figure = self._figure
            if stop.is_set() or figure is None or figure == self._told:
                continue
            self._told = figure
            try:
                await self._leases.progress(self._job.job_id, self._job.token, *figure)
            except Exception as error:  # noqa: BLE001 - a progress bar never stops a render
                log.debug("progress of job %s not reported: %r", self._job.job_id, error)
