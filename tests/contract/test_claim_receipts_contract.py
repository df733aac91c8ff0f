"""A claim that names a receipt behaves the same on every backend: sent again after its answer
was lost, it gets the very jobs and tokens it took, and leaves nothing leased to nobody."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from videocopies.adapters.memory import SequentialIds
from videocopies.application import use_cases as uc
from videocopies.domain.jobs import JobState
from videocopies.domain.orders import OrderState
from videocopies.domain.shared import WorkerId

from .conftest import Backend
from .test_complete_jobs_contract import WORKER, command, state_of
from .test_complete_then_claim_contract import queued


async def lease_of(b: Backend, claimed: uc.ClaimedJob) -> tuple[JobState, str | None]:
    async with b.new_uow() as uow:
        job = await uow.jobs.get(claimed.job_id)
        return job.state, job.lease.token if job.lease is not None else None


def claim(receipt: str | None, limit: int = 2, worker: WorkerId = WORKER) -> uc.ClaimJobCommand:
    return uc.ClaimJobCommand(worker, limit, receipt_id=receipt)


async def test_a_claim_sent_again_gets_the_same_jobs_and_tokens(backend: Backend) -> None:
    b = backend
    await queued(b, range(1, 6))
    first = await b.cases.claim_job()(claim("claim-1"))
    again = await b.cases.claim_job()(claim("claim-1"))
    assert len(first) == 2 and again == first  # not two more jobs beside them
    # Another claim takes other jobs, and the ones the lost answer named are the worker's to finish.
    other = await b.cases.claim_job()(claim("claim-2"))
    assert len(other) == 2 and {j.job_id for j in other}.isdisjoint({j.job_id for j in first})
    for job in again:
        assert await lease_of(b, job) == (JobState.LEASED, job.token)


async def test_a_claim_that_found_nothing_keeps_no_receipt(backend: Backend) -> None:
    b = backend
    assert await b.cases.claim_job()(claim("claim-1")) == []
    await queued(b, range(1, 2))
    # Sent again once a job came: it takes it, as a first try would.
    (job,) = await b.cases.claim_job()(claim("claim-1"))
    assert (await state_of(b, job.job_id))[:2] == (JobState.LEASED, OrderState.RUNNING)
    assert await b.cases.claim_job()(claim("claim-1")) == [job]


async def test_a_receipt_id_of_another_request_claims_afresh(backend: Backend) -> None:
    b = backend
    await queued(b, range(1, 3))
    (mine,) = await b.cases.claim_job()(claim("claim-1", limit=1))
    # Another worker's claim that happens to name the same id is its own claim, not a replay.
    (theirs,) = await b.cases.claim_job()(claim("claim-1", limit=1, worker=WorkerId("b")))
    assert theirs.job_id != mine.job_id


async def test_a_claim_replayed_after_its_lease_lapsed_gets_a_token_no_longer_good(backend: Backend) -> None:
    """The receipt keeps what was answered; fencing still decides what may be written."""
    b = backend
    await queued(b, range(1, 2))
    (job,) = await b.cases.claim_job()(claim("claim-1", limit=1))
    b.clock.advance(timedelta(seconds=31))
    (taken_over,) = await b.cases.claim_job()(claim("claim-2", limit=1))
    assert taken_over.job_id == job.job_id and taken_over.token != job.token
    (replayed,) = await b.cases.claim_job()(claim("claim-1", limit=1))
    assert replayed == job
    (outcome,) = await b.cases.complete_job().together([command(replayed)])
    assert isinstance(outcome, Exception)


async def test_a_retry_racing_its_first_try_gets_the_same_jobs(backend: Backend) -> None:
    """Both read no receipt and claim apart; the one that commits second loses on the receipt,
    looks again, and answers with the jobs of the one that won."""
    b = backend
    await queued(b, range(1, 7))
    racer: list[list[uc.ClaimedJob]] = []

    class RacedAtCommit:
        """The first unit of work lets the racing claim commit just before its own commit."""

        def __init__(self, uow: Any) -> None:
            self._uow = uow

        async def __aenter__(self) -> Any:
            inner = await self._uow.__aenter__()
            commit = inner.commit

            async def raced(*args: Any, **kwargs: Any) -> None:
                if not racer:
                    racer.append(await b.cases.claim_job()(claim("claim-1")))
                await commit(*args, **kwargs)

            inner.commit = raced
            return inner

        async def __aexit__(self, *exc: Any) -> Any:
            return await self._uow.__aexit__(*exc)

    claim_job = uc.ClaimJob(lambda: RacedAtCommit(b.new_uow()), b.clock, SequentialIds(seed=3), timedelta(seconds=30))
    claimed = await claim_job(claim("claim-1"))
    assert len(claimed) == 2 and claimed == racer[0]
    for job in claimed:
        assert await lease_of(b, job) == (JobState.LEASED, job.token)
    # The loser's own two jobs were never leased: four are left for the next claims.
    assert len(await b.cases.claim_job()(claim(None, limit=10))) == 4
