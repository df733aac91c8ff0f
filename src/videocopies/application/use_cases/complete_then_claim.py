"""A worker's completions and its next claim in one transaction: one commit (one disk flush on
a durable server) where the two took two, and one call where a worker over HTTP made two."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import attrs

from videocopies.application.errors import ApplicationError
from videocopies.application.ports import ClaimedJob, Clock, UnitOfWork
from videocopies.application.use_cases._common import UowFactory
from videocopies.application.use_cases.claim_job import ClaimJob, ClaimJobCommand
from videocopies.application.use_cases.complete_jobs import CompleteJobCommand, CompleteJobs, Outcome
from videocopies.domain.jobs import LeaseLost
from videocopies.domain.receipts import Receipt, ReceiptConflict
from videocopies.domain.shared import DomainError


@attrs.frozen
class CompleteThenClaimCommand:
    completions: Sequence[CompleteJobCommand]
    claim: ClaimJobCommand

    @property
    def receipt_id(self) -> str:
        """The claim's own receipt, named after the first completion's: a retried call (its
        answer lost on the network) gets the jobs it claimed, not new ones beside them."""
        return f"{self.completions[0].receipt_id}:claim"

    def request(self) -> dict[str, Any]:
        return {
            "op": "claim", "worker_id": self.claim.worker_id, "limit": self.claim.limit,
            "after": [cmd.receipt_id for cmd in self.completions],
        }


class CompleteThenClaim:
    """Each completion is fenced and answered on its own, as `CompleteJobs` answers it, and a
    refused one never costs the claim. When something refuses the transaction as a whole (the
    database's own fence as a lease runs out, a concurrent writer, an order in a state no
    completion expects), nothing of it stays: the completions go through `CompleteJobs` and the
    claim on its own, so each gets the answer it would get alone. A call retried after its answer
    was lost gets the same answers and the same jobs: the claim keeps a receipt of its own."""

    def __init__(self, uow: UowFactory, clock: Clock, complete: CompleteJobs, claim: ClaimJob) -> None:
        self._uow, self._clock, self._complete, self._claim = uow, clock, complete, claim

    async def __call__(self, cmd: CompleteThenClaimCommand) -> tuple[list[Outcome], list[ClaimedJob]]:
        completions = list(cmd.completions)
        if not completions:
            return [], await self._claim(cmd.claim)
        now = self._clock.now()
        try:
            async with self._uow() as uow:
                items = list(enumerate(completions))
                answered = await self._complete.within(uow, items, now, also_receipts=[cmd.receipt_id])
                claimed = await self._claim_once(uow, cmd, now)
                await uow.commit()
        except (LeaseLost, ApplicationError, DomainError):
            outcomes = await self._complete(completions)
            return outcomes, await self._claim(cmd.claim)
        outcomes = [answered[i] for i in range(len(completions))]
        await self._complete.count_refusals(completions, outcomes)
        return outcomes, claimed

    async def _claim_once(self, uow: UnitOfWork, cmd: CompleteThenClaimCommand, now: datetime) -> list[ClaimedJob]:
        stored = (await uow.receipts.get_many([cmd.receipt_id])).get(cmd.receipt_id)
        if stored is not None:
            try:
                return [ClaimedJob.from_record(job) for job in stored.replay(cmd.request())["jobs"]]
            except ReceiptConflict:
                return await self._claim.within(uow, cmd.claim, now)  # another request's id: no receipt
        claimed = await self._claim.within(uow, cmd.claim, now)
        if claimed:  # nothing claimed: a retry claiming afresh takes nothing twice
            jobs = [job.to_record() for job in claimed]
            await uow.receipts.add(Receipt.record(cmd.receipt_id, cmd.request(), {"jobs": jobs}))
        return claimed
