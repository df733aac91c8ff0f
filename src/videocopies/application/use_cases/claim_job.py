"""A worker takes jobs: a lease, a fresh owner token, and the copies still to render."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

import attrs

from videocopies.application.errors import Conflict
from videocopies.application.ports import ClaimedJob, Clock, Ids, UnitOfWork
from videocopies.application.use_cases._common import UowFactory, close_order_for_job, load_order
from videocopies.domain.jobs import Job
from videocopies.domain.receipts import Receipt, ReceiptConflict
from videocopies.domain.shared import WorkerId


@attrs.frozen
class ClaimJobCommand:
    worker_id: WorkerId
    limit: int = 1
    max_source_bytes: int | None = None  # what the worker's free disk can take on
    # Chosen by the caller for this claim and sent again with its retry: a claim that took jobs
    # keeps a receipt, so a retry whose first answer was lost gets those very jobs and tokens,
    # not others beside them (whose leases would lapse and cost each an attempt).
    receipt_id: str | None = None

    def request(self) -> dict[str, Any]:
        return {
            "op": "claim", "worker_id": self.worker_id, "limit": self.limit, "max_source_bytes": self.max_source_bytes,
        }


class ClaimJob:
    """Claim up to `limit` jobs: queued ones, or ones whose lease ran out (taken over;
    an expiry that exhausts the attempts fails the order and refunds it)."""

    def __init__(self, uow: UowFactory, clock: Clock, ids: Ids, ttl: timedelta) -> None:
        self._uow, self._clock, self._ids, self._ttl = uow, clock, ids, ttl

    async def __call__(self, cmd: ClaimJobCommand) -> list[ClaimedJob]:
        now = self._clock.now()
        # A claim with a receipt looks twice: its retry may have raced its first try, and the
        # one that lost on the receipt finds the winner's jobs the second time.
        for _ in range(1 if cmd.receipt_id is None else 2):
            try:
                async with self._uow() as uow:
                    claimed = await self.within(uow, cmd, now)
                    await uow.commit()
            except Conflict:
                continue  # another claimer won these rows; the caller simply polls again
            return claimed
        return []

    async def within(self, uow: UnitOfWork, cmd: ClaimJobCommand, now: datetime) -> list[ClaimedJob]:
        """The claim inside a transaction the caller commits (`CompleteThenClaim`'s). Its receipt,
        if it has one, is read in the same round trip as the first claimable jobs."""
        receipt_id = cmd.receipt_id
        receipts = [receipt_id] if receipt_id is not None else []
        batch = await uow.jobs.claimable(now, cmd.limit, cmd.max_source_bytes, receipts=receipts)
        if receipt_id is not None:
            stored = (await uow.receipts.get_many([receipt_id])).get(receipt_id)
            if stored is not None:
                try:
                    return [ClaimedJob.from_record(job) for job in stored.replay(cmd.request())["jobs"]]
                except ReceiptConflict:
                    receipt_id = None  # another request's id: this claim keeps no receipt
        claimed = await self._take(uow, cmd, now, batch)
        if claimed and receipt_id is not None:  # nothing claimed: a retry claiming afresh takes nothing twice
            jobs = [job.to_record() for job in claimed]
            await uow.receipts.add(Receipt.record(receipt_id, cmd.request(), {"jobs": jobs}))
        return claimed

    async def _take(
        self, uow: UnitOfWork, cmd: ClaimJobCommand, now: datetime, batch: Sequence[Job]
    ) -> list[ClaimedJob]:
        claimed: list[ClaimedJob] = []
        # A lapsed lease on its last attempt closes instead of being claimed; look again,
        # past the rows already seen (they stay locked, and unwritten, until commit).
        seen: set[str] = set()
        for look in range(3):
            closed = 0
            if look:
                batch = await uow.jobs.claimable(now, cmd.limit - len(claimed) + len(seen), cmd.max_source_bytes)
            await uow.prefetch(orders=[job.order_id for job in batch])  # one round trip
            for job in batch:
                if job.job_id in seen:
                    continue
                seen.add(job.job_id)
                if job.expire(now) and job.is_final:
                    await close_order_for_job(uow, job, now)
                    closed += 1
                    continue
                order = await load_order(uow, job.order_id)
                lease = job.claim(cmd.worker_id, self._ids.owner_token(), now, self._ttl)
                order.start()
                claimed.append(
                    ClaimedJob(
                        job.job_id, job.order_id, lease.token, lease.lease_until,
                        lease.attempt, order.quote.source_key, tuple(job.remaining()), job.made_looks(),
                    )
                )
                if len(claimed) >= cmd.limit:
                    break
            if not closed or len(claimed) >= cmd.limit:
                break
        return claimed
