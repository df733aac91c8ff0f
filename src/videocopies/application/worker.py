"""The worker: claim a job, render its missing copies, verify and store each, checkpoint it,
and leave nothing behind on any way out (done, failed, cancelled, lease lost)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
import uuid
from pathlib import Path
from typing import Any

import attrs

from videocopies.application.errors import UnusableMedia
from videocopies.application.make_copy import CopyTooLarge, MakeCopy
from videocopies.application.ports import (
    ClaimedJob,
    CopyInspector,
    DiskSpace,
    JobFiles,
    JobLeases,
    Prober,
    Transcoder,
)
from videocopies.application.progress import ProgressReports
from videocopies.application.worker_figures import WorkerFigures
from videocopies.application.worker_settings import NotEnoughDisk, WorkerSettings, disk_needed, largest_source
from videocopies.domain.jobs import CopyArtifact, LeaseLost
from videocopies.domain.quality import QualityThresholds

log = logging.getLogger(__name__)
# How long a job's last word waits for a renewal or figure already sent (their HTTP calls time out later).
_IN_FLIGHT_S = 5.0


class CancelRequested(Exception):
    """Core asked for the job to stop; the copy in hand was finished and recorded."""


@attrs.define
class BadSource(Exception):
    """The source cannot be made into copies at all; retrying elsewhere will not help."""

    reason: str


class Worker:
    """One job at a time. Renewal runs beside the render; a lost lease or a cancel stops the
    render, waits for FFmpeg and any upload, and only then is the job's directory removed."""

    def __init__(
        self,
        leases: JobLeases,
        files: JobFiles,
        transcoder: Transcoder,
        prober: Prober,
        disk: DiskSpace,
        settings: WorkerSettings,
        inspector: CopyInspector | None = None,
        thresholds: QualityThresholds | None = None,
        source_prober: Prober | None = None,
        figures: WorkerFigures | None = None,
    ) -> None:
        """`prober` verifies copies; `source_prober` (by default the same) refuses a source
        over the service's limits, which a copy need not meet (a slowed copy lasts longer)."""
        self._leases, self._files, self._disk, self._settings = leases, files, disk, settings
        self.figures = figures or WorkerFigures()
        self._source_prober = source_prober or prober
        self._make = MakeCopy(
            transcoder, prober, inspector, thresholds or QualityThresholds(), settings.duration_tolerance_s,
            settings.max_copy_bytes,
        )
        self._stopping = asyncio.Event()
        self.busy = False  # holding a job: a stop must wait for it to be given back
        self._next: list[ClaimedJob] = []  # claimed with the last completion, for the next round

    def stop(self) -> None:
        """Shut down: the job in hand is stopped, given back for another worker, cleaned up."""
        self._stopping.set()

    @property
    def home(self) -> Path:
        return self._settings.work_root / self._settings.worker_id

    def remove_orphans(self) -> int:
        """A restarted worker first removes what a killed predecessor of the same id left."""
        if not self.home.exists():
            return 0
        orphans = list(self.home.iterdir())
        for path in orphans:
            shutil.rmtree(path, ignore_errors=True) if path.is_dir() else path.unlink(missing_ok=True)
        return len(orphans)

    async def run_once(self) -> bool:
        """Claim and finish one job (or the one claimed with the last completion); False when
        there was none. A job claimed with a completion while stopping is given back at once."""
        self._settings.work_root.mkdir(parents=True, exist_ok=True)
        claimed, self._next = self._next, []
        if not claimed:
            claimed = list(await self._leases.claim(self._settings.worker_id, 1, self._fits()))
        self.busy = bool(claimed)
        try:
            for job in claimed:
                await self.process(job)
        finally:
            try:
                if self._stopping.is_set():
                    await self.give_back()
            finally:
                self.busy = False
        return bool(claimed)

    async def give_back(self) -> None:
        """The jobs claimed with the last completion and not started: another worker takes them
        now, not when their lease runs out (which would cost them an attempt)."""
        held, self._next = self._next, []
        for job in held:
            await self._finish(job, "failed", reason="the worker was stopped", retryable=True)

    def _fits(self) -> int:
        return largest_source(self._disk.free_bytes(self._settings.work_root), self._settings)

    async def process(self, job: ClaimedJob) -> str:
        """Returns how the job ended: done, failed, cancelled or lease_lost."""
        workdir = self.home / job.job_id
        workdir.mkdir(parents=True, exist_ok=True)
        stop = asyncio.Event()
        outcome = {"why": ""}
        progress = ProgressReports(self._leases, job, self._settings.progress_every_s)
        render = asyncio.create_task(self._render(job, workdir, progress))
        renewer = asyncio.create_task(self._keep_lease(job, render, stop, outcome))
        reporter = asyncio.create_task(progress.run(stop))

        async def last_word() -> None:
            """No renewal or figure after the job's last word (its completion, failure or cancel),
            and none still travelling: one already sent lands first. Sent on after the lease is
            gone, it would reach core as a refused write, the figure operators read as zombies."""
            stop.set()
            _, late = await asyncio.wait([renewer, reporter], timeout=_IN_FLIGHT_S)
            for task in late:
                task.cancel()

        try:
            await render
            await last_word()
            return await self._finish(job, "done")
        except asyncio.CancelledError:
            if outcome["why"] == "cancel":
                await last_word()
                await self._leases.acknowledge_cancel(job.job_id, job.token)
                return "cancelled"
            if outcome["why"] == "lease_lost":
                return "lease_lost"  # someone else owns the job now: write nothing
            if outcome["why"] == "shutdown":
                await last_word()
                return await self._finish(job, "failed", reason="the worker was stopped", retryable=True)
            raise
        except CancelRequested:
            await last_word()
            await self._leases.acknowledge_cancel(job.job_id, job.token)
            return "cancelled"
        except LeaseLost:
            return "lease_lost"
        except BadSource as bad:
            await last_word()
            return await self._finish(job, "failed", reason=f"bad source: {bad.reason}", retryable=False)
        except Exception as error:  # noqa: BLE001 - any other failure is retried elsewhere
            log.warning("job %s failed: %r", job.job_id, error)
            await last_word()
            return await self._finish(job, "failed", reason=f"{type(error).__name__}: {error}", retryable=True)
        finally:
            stop.set()
            renewer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await renewer
            reporter.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reporter
            shutil.rmtree(workdir, ignore_errors=True)

    async def _finish(self, job: ClaimedJob, how: str, reason: str = "", retryable: bool = True) -> str:
        receipt = str(uuid.uuid4())
        try:
            if how == "done" and not self._stopping.is_set():
                # The next job is claimed in the completion's own call and transaction.
                outcome, claimed = await self._leases.complete_then_claim(
                    job.job_id, job.token, receipt, 1, self._fits()
                )
                self._next = list(claimed)
                if isinstance(outcome, Exception):
                    raise outcome
            elif how == "done":
                await self._leases.complete(job.job_id, job.token, receipt)
            else:
                await self._leases.fail(job.job_id, job.token, reason, retryable, receipt)
        except LeaseLost:
            return "lease_lost"
        return how

    async def _keep_lease(
        self, job: ClaimedJob, render: asyncio.Task[None], stop: asyncio.Event, outcome: dict[str, str]
    ) -> None:
        while not stop.is_set():
            waits = [asyncio.ensure_future(stop.wait()), asyncio.ensure_future(self._stopping.wait())]
            await asyncio.wait(waits, timeout=self._settings.renew_every_s, return_when=asyncio.FIRST_COMPLETED)
            for waiting in waits:
                waiting.cancel()
            if stop.is_set():
                return
            if self._stopping.is_set():
                outcome["why"] = "shutdown"
                render.cancel()
                return
            try:
                cancel = await self._leases.renew(job.job_id, job.token)
            except LeaseLost:
                outcome["why"] = "lease_lost"
                render.cancel()
                return
            if cancel:
                outcome["why"] = "cancel"
                render.cancel()
                return

    async def _render(self, job: ClaimedJob, workdir: Path, progress: ProgressReports) -> None:
        source = workdir / "source"
        await self._files.fetch_source(job, source)
        size = source.stat().st_size
        self.figures.downloaded_bytes += size
        needed = disk_needed(size, len(job.remaining), self._settings)
        if (free := self._disk.free_bytes(workdir)) < needed:
            raise NotEnoughDisk(needed, free)
        try:
            original = await self._source_prober.probe(source, full_decode=False)
        except UnusableMedia as refused:
            if refused.permanent:
                raise BadSource(refused.reason) from refused
            raise
        fingerprints: dict[int, tuple[int, ...]] = dict(job.made_looks)
        for index, plan in job.remaining:
            target = workdir / f"copy-{index}.mp4"
            try:
                made, quality = await self._make(
                    job.job_id, source, target, original, plan, fingerprints, index, progress.of_copy(index)
                )
            except CopyTooLarge as large:
                log.warning("job %s: %s; given up", job.job_id, large)
                await self._leases.give_up_copy(job.job_id, job.token, index, "too_large", None)
                continue
            if made is None:
                assert quality is not None
                reason = ",".join(s.value for s in self._make.thresholds.shortfalls(quality))
                log.info("copy %d of job %s given up after %d renders: %s", index, job.job_id, quality.attempt + 1,
                         reason)
                await self._leases.give_up_copy(job.job_id, job.token, index, reason, quality)
                continue
            key, stored_size, sha256 = await _not_abandoned(self._files.store_copy(job, index, target))
            target.unlink()
            self.figures.uploaded_bytes += stored_size
            artifact = CopyArtifact(key, stored_size, sha256, made.duration_s, made.width, made.height, quality)
            await self._leases.checkpoint(job.job_id, job.token, index, artifact)
            self.figures.copies_made += 1
            if index != job.remaining[-1][0] and await self._leases.renew(job.job_id, job.token):
                # Asked between renewals (a user who blocked the bot, a Cancel press): no
                # further copy is begun, rather than rendering on until the next renewal.
                raise CancelRequested(job.job_id)


async def _not_abandoned(operation: Any) -> Any:
    """Run a file operation that a cancel must wait for, not abandon: an upload reading the
    copy must finish before the directory holding it is removed."""
    task = asyncio.ensure_future(operation)
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        with contextlib.suppress(Exception):
            await task
        raise
