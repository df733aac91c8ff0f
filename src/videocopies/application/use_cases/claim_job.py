"""A worker takes jobs: a lease, a fresh owner token, and the copies still to render."""

from __future__ import annotations

from datetime import datetime, timedelta

import attrs

from videocopies.application.errors import Conflict
from videocopies.application.ports import ClaimedJob, Clock, Ids, UnitOfWork
from videocopies.application.use_cases._common import UowFactory, close_order_for_job, load_order
from videocopies.domain.shared import WorkerId


@attrs.frozen
class ClaimJobCommand:
    worker_id: WorkerId
    limit: int = 1
    max_source_bytes: int | None = None  # what the worker's free disk can take on


class ClaimJob:
    """Claim up to `limit` jobs: queued ones, or ones whose lease ran out (taken over;
    an expiry that exhausts the attempts fails the order and refunds it)."""

    def __init__(self, uow: UowFactory, clock: Clock, ids: Ids, ttl: timedelta) -> None:
        self._uow, self._clock, self._ids, self._ttl = uow, clock, ids, ttl

    async def __call__(self, cmd: ClaimJobCommand) -> list[ClaimedJob]:
        now = self._clock.now()
        try:
            async with self._uow() as uow:
                claimed = await self.within(uow, cmd, now)
                await uow.commit()
        except Conflict:
            return []  # another claimer won these rows; the caller simply polls again
        return claimed

    async def within(self, uow: UnitOfWork, cmd: ClaimJobCommand, now: datetime) -> list[ClaimedJob]:
        """The claim inside a transaction the caller commits (`CompleteThenClaim`'s)."""
        claimed: list[ClaimedJob] = []
        # A lapsed lease on its last attempt closes instead of being claimed; look again,
        # past the rows already seen (they stay locked, and unwritten, until commit).
        seen: set[str] = set()
        for _ in range(3):
            closed = 0
            wanted = cmd.limit - len(claimed) + len(seen)
            batch = await uow.jobs.claimable(now, wanted, cmd.max_source_bytes)
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
