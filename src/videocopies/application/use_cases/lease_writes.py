"""Writes a lease holder makes while it works: renew, and a checkpoint per finished copy."""

from __future__ import annotations

from datetime import datetime, timedelta

import attrs

from videocopies.application.ports import Clock, LeaseRenewals
from videocopies.application.use_cases._common import (
    UowFactory,
    lease_write,
    load_account,
    load_job,
    load_order,
)
from videocopies.application.use_cases.announcements import CopyGivenUp, CopyReadyToSend, OrderProgressed
from videocopies.domain.jobs import CopyArtifact, Lease
from videocopies.domain.quality import MAX_RERENDERS, CopyQuality
from videocopies.domain.shared import JobId, OrderId, OwnerToken, WorkerId


@attrs.frozen
class RenewLeaseCommand:
    job_id: JobId
    token: OwnerToken
    worker_id: WorkerId | None = None


@attrs.frozen
class RenewResult:
    lease_until: datetime
    cancel_requested: bool


class RenewLease:
    """Extend the lease of a live owner; tells it when the user asked to cancel.

    With `renewals` (a store that extends a held lease in one step), a live lease is renewed there
    and only a renewal it refuses takes the whole path, which says why (and counts a zombie's)."""

    def __init__(self, uow: UowFactory, clock: Clock, ttl: timedelta, renewals: LeaseRenewals | None = None) -> None:
        self._uow, self._clock, self._ttl, self._renewals = uow, clock, ttl, renewals

    async def __call__(self, cmd: RenewLeaseCommand) -> RenewResult:
        now = self._clock.now()
        if self._renewals is not None:
            until = Lease.renewed_until(now, self._ttl)
            if (cancel := await self._renewals.renew(cmd.job_id, cmd.token, cmd.worker_id, now, until)) is not None:
                return RenewResult(until, cancel)
        async with lease_write(self._uow, cmd.worker_id, "renew", now) as uow:
            job = await load_job(uow, cmd.job_id, cmd.worker_id, cmd.token)
            cancel = job.renew(cmd.token, now, self._ttl)
            assert job.lease is not None
            result = RenewResult(job.lease.lease_until, cancel)
            await uow.commit(durable=False)
            return result


@attrs.frozen
class ReportProgressCommand:
    job_id: JobId
    token: OwnerToken
    index: int
    percent: int
    worker_id: WorkerId | None = None


class ReportProgress:
    """How far the copy being rendered is, shown in the order's progress message. Only the
    live lease holder may report; a report on an order that has ended says nothing."""

    def __init__(self, uow: UowFactory, clock: Clock) -> None:
        self._uow, self._clock = uow, clock

    async def __call__(self, cmd: ReportProgressCommand) -> bool:
        now = self._clock.now()
        async with lease_write(self._uow, cmd.worker_id, "progress", now) as uow:
            job = await load_job(uow, cmd.job_id, cmd.worker_id, cmd.token)
            job.check_held(cmd.token, now)
            order = await load_order(uow, job.order_id)
            if order.is_final or not 0 <= cmd.index < len(order.copies):
                return False
            await uow.record(OrderProgressed.of(order, cmd.index, max(0, min(100, cmd.percent))))
            await uow.commit(durable=False)  # a lost figure is only a progress bar a step behind
            return True


@attrs.frozen
class CheckpointCopyCommand:
    job_id: JobId
    token: OwnerToken
    index: int
    artifact: CopyArtifact
    worker_id: WorkerId | None = None


class CheckpointCopy:
    """Record a stored, verified copy; in the same transaction the copy is queued for
    sending to the user, so it arrives the moment it is ready."""

    def __init__(self, uow: UowFactory, clock: Clock) -> None:
        self._uow, self._clock = uow, clock

    async def __call__(self, cmd: CheckpointCopyCommand) -> bool:
        now = self._clock.now()
        async with lease_write(self._uow, cmd.worker_id, "checkpoint", now) as uow:
            job = await load_job(uow, cmd.job_id, cmd.worker_id, cmd.token)
            if not job.checkpoint(cmd.token, now, cmd.index, cmd.artifact):
                return False
            order = await load_order(uow, job.order_id)
            if order.copy_rendered(cmd.index, cmd.artifact.object_key):
                await uow.record(
                    CopyReadyToSend(order.user_id, order.order_id, cmd.index, len(order.copies), cmd.artifact)
                )
            await uow.commit()
            return True


@attrs.frozen
class GiveUpCopyCommand:
    job_id: JobId
    token: OwnerToken
    index: int
    reason: str  # a Shortfall value, or several joined by commas
    quality: CopyQuality | None = None
    worker_id: WorkerId | None = None


class GiveUpCopy:
    """A copy that failed the quality gate on every allowed render is settled without a file:
    never rendered again, never delivered, never charged. In the same transaction its price
    returns to the user's lots and the user is told why."""

    def __init__(self, uow: UowFactory, clock: Clock) -> None:
        self._uow, self._clock = uow, clock

    async def __call__(self, cmd: GiveUpCopyCommand) -> bool:
        now = self._clock.now()
        async with lease_write(self._uow, cmd.worker_id, "give_up_copy", now) as uow:
            job = await load_job(uow, cmd.job_id, cmd.worker_id, cmd.token)
            if not job.checkpoint(cmd.token, now, cmd.index, CopyArtifact.given_up(cmd.reason, cmd.quality)):
                return False
            order = await load_order(uow, job.order_id)
            returned = 0
            if price := order.copy_given_up(cmd.index):
                account = await load_account(uow, order.user_id)
                reservation = account.reservation(order.order_id)
                if reservation is not None and reservation.open:
                    returned = account.release(order.order_id, now, min(price, reservation.held))
                tries = cmd.quality.attempt + 1 if cmd.quality else MAX_RERENDERS + 1
                await uow.record(CopyGivenUp(
                    order.user_id, order.order_id, cmd.index, len(order.copies), cmd.reason, tries, returned
                ))
            await uow.commit()
            return True


@attrs.frozen
class HeldJobView:
    job_id: JobId
    order_id: OrderId
    source_key: str
    copies: int
    lease_until: datetime
    cancel_requested: bool


class InspectHeldJob:
    """What the holder of a live lease may read about its job: whether to stop, and which
    objects are its own (the source, and the copies it may upload). Writes nothing."""

    def __init__(self, uow: UowFactory, clock: Clock) -> None:
        self._uow, self._clock = uow, clock

    async def __call__(self, job_id: JobId, token: OwnerToken, worker_id: WorkerId | None = None) -> HeldJobView:
        async with self._uow() as uow:
            job = await load_job(uow, job_id, worker_id, token)
            lease = job.check_held(token, self._clock.now())
            order = await load_order(uow, job.order_id)
            return HeldJobView(
                job.job_id, job.order_id, order.quote.source_key, job.copies, lease.lease_until, job.cancel_requested
            )
