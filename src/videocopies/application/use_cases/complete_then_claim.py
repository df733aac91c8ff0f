"""A worker's completions and its next claim in one transaction: one commit (one disk flush on
a durable server) where the two took two, and one call where a worker over HTTP made two."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from videocopies.application.errors import ApplicationError
from videocopies.application.ports import ClaimedJob, Clock
from videocopies.application.use_cases._common import UowFactory
from videocopies.application.use_cases.claim_job import ClaimJob, ClaimJobCommand
from videocopies.application.use_cases.complete_jobs import CompleteJobCommand, CompleteJobs, Outcome
from videocopies.domain.jobs import LeaseLost
from videocopies.domain.shared import DomainError


@attrs.frozen
class CompleteThenClaimCommand:
    completions: Sequence[CompleteJobCommand]
    claim: ClaimJobCommand

    @property
    def receipted_claim(self) -> ClaimJobCommand:
        """The claim with a receipt of its own, named after the first completion's unless the
        caller chose one: a retried call (its answer lost on the network) gets the jobs it
        claimed, not new ones beside them."""
        if self.claim.receipt_id is not None:
            return self.claim
        return attrs.evolve(self.claim, receipt_id=f"{self.completions[0].receipt_id}:claim")


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
        now, claim = self._clock.now(), cmd.receipted_claim
        assert claim.receipt_id is not None
        try:
            async with self._uow() as uow:
                items = list(enumerate(completions))
                answered = await self._complete.within(uow, items, now, also_receipts=[claim.receipt_id])
                claimed = await self._claim.within(uow, claim, now)
                await uow.commit()
        except (LeaseLost, ApplicationError, DomainError):
            outcomes = await self._complete(completions)
            return outcomes, await self._claim(claim)
        outcomes = [answered[i] for i in range(len(completions))]
        await self._complete.count_refusals(completions, outcomes)
        return outcomes, claimed
