"""How a job ends: completed, failed, cancelled by its owner, or its lease ran out."""

from __future__ import annotations

from typing import Any

import attrs

from videocopies.application.ports import Clock, Notifier, UnitOfWork
from videocopies.application.use_cases._common import (
    UowFactory,
    close_order_for_job,
    lease_write,
    load_job,
)
from videocopies.application.use_cases.complete_jobs import (
    CompleteJobCommand,
    CompleteJobs,
    Grouped,
    completion_result,
)
from videocopies.domain.jobs import JobState
from videocopies.domain.receipts import Receipt
from videocopies.domain.shared import JobId, OwnerToken, WorkerId

__all__ = ["AcknowledgeCancel", "CompleteJob", "CompleteJobCommand", "ExpireLeases", "FailJob", "FailJobCommand"]


class CompleteJob:
    """Close a job whose every copy is checkpointed and settle its order. A retry with the
    same receipt id gets the stored answer; it never runs twice. Completions that arrive
    while `lanes` others are being committed wait for the next and are committed together
    (`CompleteJobs`): on a durable server one flush serves them all."""

    def __init__(self, uow: UowFactory, clock: Clock, lanes: int = 2) -> None:
        self._uow, self._clock = uow, clock
        self.together = CompleteJobs(uow, clock, self.alone)
        self._grouped = Grouped(self.alone, self.together, lanes)

    async def __call__(self, cmd: CompleteJobCommand) -> dict[str, Any]:
        return await self._grouped(cmd)

    @property
    def batches(self) -> int:
        """How many groups of more than one completion were committed together so far."""
        return self._grouped.batches

    async def alone(self, cmd: CompleteJobCommand) -> dict[str, Any]:
        """This completion in a transaction of its own."""
        now = self._clock.now()
        async with lease_write(self._uow, cmd.worker_id, "complete", now) as uow:
            await _closing_reads(uow, cmd.job_id, cmd.receipt_id)
            if (receipt := await uow.receipts.get(cmd.receipt_id)) is not None:
                return dict(receipt.replay(cmd.request()))
            job = await load_job(uow, cmd.job_id, cmd.worker_id, cmd.token)
            job.complete(cmd.token, now)
            await close_order_for_job(uow, job, now)
            result = completion_result(job)
            await uow.receipts.add(Receipt.record(cmd.receipt_id, cmd.request(), result))
            await uow.commit()
            return result


async def _closing_reads(uow: UnitOfWork, job_id: JobId, receipt_id: str | None = None) -> None:
    """What closing a job reads (its receipt, the job, its order and its account) in one round
    trip, locked in the order a batch of completions locks them (complete_jobs.py), instead of
    one round trip each. A replayed write locks them too, at no harm: it is the rare case."""
    receipts = [receipt_id] if receipt_id is not None else []
    await uow.prefetch(receipts=receipts, jobs=[job_id], their_orders=True, their_accounts=True)


@attrs.frozen
class FailJobCommand:
    job_id: JobId
    token: OwnerToken
    reason: str
    retryable: bool
    receipt_id: str
    worker_id: WorkerId | None = None

    def request(self) -> dict[str, Any]:
        return {
            "op": "fail", "job_id": self.job_id, "token": self.token,
            "reason": self.reason, "retryable": self.retryable,
        }


class FailJob:
    """The owner gives up on this attempt. The job is queued again while attempts remain;
    after the last one the order fails and every coin not delivered is returned."""

    def __init__(self, uow: UowFactory, clock: Clock, notifier: Notifier) -> None:
        self._uow, self._clock, self._notifier = uow, clock, notifier

    async def __call__(self, cmd: FailJobCommand) -> dict[str, Any]:
        now = self._clock.now()
        async with lease_write(self._uow, cmd.worker_id, "fail", now) as uow:
            await _closing_reads(uow, cmd.job_id, cmd.receipt_id)
            if (receipt := await uow.receipts.get(cmd.receipt_id)) is not None:
                return dict(receipt.replay(cmd.request()))
            job = await load_job(uow, cmd.job_id, cmd.worker_id, cmd.token)
            state = job.fail(cmd.token, now, cmd.reason, cmd.retryable)
            await close_order_for_job(uow, job, now)
            result = {"job_id": job.job_id, "state": state.value, "attempts": job.attempts}
            await uow.receipts.add(Receipt.record(cmd.receipt_id, cmd.request(), result))
            await uow.commit()
        if state is JobState.QUEUED:
            self._notifier.job_available()
        return result


class AcknowledgeCancel:
    """The owner has stopped FFmpeg and its file operations: close the job and order,
    and return what was not delivered."""

    def __init__(self, uow: UowFactory, clock: Clock) -> None:
        self._uow, self._clock = uow, clock

    async def __call__(self, job_id: JobId, token: OwnerToken, worker_id: WorkerId | None = None) -> None:
        now = self._clock.now()
        async with lease_write(self._uow, worker_id, "acknowledge_cancel", now) as uow:
            await _closing_reads(uow, job_id)
            job = await load_job(uow, job_id, worker_id, token)
            if not job.acknowledge_cancel(token, now):
                return  # the same owner's retry: already closed
            await close_order_for_job(uow, job, now)
            await uow.commit()


class ExpireLeases:
    """The sweep: leases that ran out are taken back, so the job can be claimed again
    (or closed, when it was cancelled or out of attempts)."""

    def __init__(self, uow: UowFactory, clock: Clock, notifier: Notifier, batch: int = 100) -> None:
        self._uow, self._clock, self._notifier, self._batch = uow, clock, notifier, batch

    async def __call__(self) -> int:
        now = self._clock.now()
        requeued = expired = 0
        async with self._uow() as uow:
            for job in await uow.jobs.expired(now, self._batch):
                if job.expire(now):
                    expired += 1
                    if job.is_final:
                        await close_order_for_job(uow, job, now)
                    else:
                        requeued += 1
            await uow.commit()
        if requeued:
            self._notifier.job_available()
        return expired
