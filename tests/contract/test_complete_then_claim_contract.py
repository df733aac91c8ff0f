"""A worker's completions and its next claim in one transaction behave the same on every
backend: each completion fenced and answered on its own, a refused one never costing the
claim, receipts replayed, and a transaction refused as a whole leaving each its own answer."""

from __future__ import annotations

from datetime import timedelta

from videocopies.application import use_cases as uc
from videocopies.domain.coins import LotKind
from videocopies.domain.jobs import JobState, LeaseLossReason, LeaseLost
from videocopies.domain.orders import OrderState
from videocopies.domain.shared import UserId, WorkerId

from .conftest import Backend
from .test_complete_jobs_contract import (
    WORKER,
    command,
    one_lapsed_by_the_database,
    refusals,
    rendered_jobs,
    state_of,
)


async def queued(b: Backend, users: range) -> None:
    for user in users:
        await b.cases.grant_coins()(uc.GrantCoinsCommand(UserId(user), LotKind.START, 50, timedelta(days=30)))
        quote = await b.cases.quote_order()(uc.QuoteOrderCommand(UserId(user), "sources/clip.mp4", 1))
        await b.cases.confirm_order()(uc.ConfirmOrderCommand(UserId(user), quote.quote_id, quote.token))


async def balance_of(b: Backend, user: int) -> object:
    async with b.new_uow() as uow:
        return (await uow.accounts.get(UserId(user))).balance(b.clock.now())


def then_claim(completions: list[uc.CompleteJobCommand], limit: int = 5) -> uc.CompleteThenClaimCommand:
    return uc.CompleteThenClaimCommand(completions, uc.ClaimJobCommand(WORKER, limit))


async def test_completions_commit_with_the_next_claim(backend: Backend) -> None:
    b = backend
    first, second = await rendered_jobs(b, range(1, 3))
    await queued(b, range(3, 6))
    outcomes, claimed = await b.cases.complete_then_claim()(then_claim([command(first), command(second)]))
    assert outcomes == [{"job_id": j.job_id, "state": "done", "copies": 1} for j in (first, second)]
    assert len(claimed) == 3 and {j.job_id for j in claimed}.isdisjoint({first.job_id, second.job_id})
    for job in (first, second):
        assert await state_of(b, job.job_id) == (JobState.DONE, OrderState.DONE, 1)
    for job in claimed:
        assert (await state_of(b, job.job_id))[:2] == (JobState.LEASED, OrderState.RUNNING)
    # What was claimed is completed with the claim after it, which finds nothing left.
    outcomes, claimed_again = await b.cases.complete_then_claim()(then_claim([]))
    assert outcomes == [] and claimed_again == []


async def test_a_refused_completion_never_costs_the_claim(backend: Backend) -> None:
    b = backend
    good, stale = await rendered_jobs(b, range(1, 3))
    await queued(b, range(3, 4))
    outcomes, claimed = await b.cases.complete_then_claim()(
        then_claim([command(good), command(stale, token="not-the-token")])
    )
    assert outcomes[0] == {"job_id": good.job_id, "state": "done", "copies": 1}
    assert isinstance(outcomes[1], LeaseLost) and outcomes[1].reason is LeaseLossReason.STALE_TOKEN
    assert len(claimed) == 1
    assert await state_of(b, stale.job_id) == (JobState.LEASED, OrderState.RUNNING, 0)
    assert await refusals(b) == 1  # the zombie's write is counted, as a single one is


async def test_a_retried_call_gets_the_same_answers_and_the_same_jobs(backend: Backend) -> None:
    b = backend
    (job,) = await rendered_jobs(b, range(1, 2))
    await queued(b, range(2, 4))
    first, claimed = await b.cases.complete_then_claim()(then_claim([command(job)], limit=1))
    balance = await balance_of(b, 1)
    # The answer was lost on its way: the worker sends the same call again.
    again, claimed_again = await b.cases.complete_then_claim()(then_claim([command(job)], limit=1))
    assert again == first and claimed_again == claimed  # the same job and token, not another job
    assert await balance_of(b, 1) == balance  # the order was settled once, not twice
    assert await state_of(b, job.job_id) == (JobState.DONE, OrderState.DONE, 1)
    # The job the lost answer named is still there for the next claim; nothing was orphaned.
    (left,) = await b.cases.claim_job()(uc.ClaimJobCommand(WORKER, 5))
    assert left.job_id not in (job.job_id, claimed[0].job_id)


async def test_a_refused_completion_retried_still_gets_the_job_its_claim_took(backend: Backend) -> None:
    b = backend
    (job,) = await rendered_jobs(b, range(1, 2))
    await queued(b, range(2, 4))
    stale = then_claim([command(job, token="not-the-token")], limit=1)
    refused, claimed = await b.cases.complete_then_claim()(stale)
    again, claimed_again = await b.cases.complete_then_claim()(stale)
    assert isinstance(refused[0], LeaseLost) and isinstance(again[0], LeaseLost)
    assert claimed_again == claimed and len(claimed) == 1


async def test_a_lapsed_lease_is_refused_and_its_job_claimed_afresh(backend: Backend) -> None:
    b = backend
    (job,) = await rendered_jobs(b, range(1, 2))
    b.clock.advance(timedelta(seconds=31))
    outcomes, claimed = await b.cases.complete_then_claim()(then_claim([command(job)], limit=1))
    assert isinstance(outcomes[0], LeaseLost) and outcomes[0].reason is LeaseLossReason.EXPIRED
    # The lapsed job is there to be taken over, with a new token and its next attempt.
    assert [c.job_id for c in claimed] == [job.job_id] and claimed[0].token != job.token
    assert claimed[0].attempt == job.attempt + 1
    assert (await state_of(b, job.job_id))[:2] == (JobState.LEASED, OrderState.RUNNING)


async def test_the_database_fence_refusing_the_transaction_leaves_each_its_own_answer(backend: Backend) -> None:
    """A lease that runs out by the database's clock refuses the whole write: the completions
    are answered one by one, the rest commit, and the claim still takes its job."""
    b = backend
    late, early = await one_lapsed_by_the_database(b)
    await queued(b, range(3, 4))
    outcomes, claimed = await b.cases.complete_then_claim()(
        uc.CompleteThenClaimCommand([command(late), command(early)], uc.ClaimJobCommand(WorkerId("b"), 1))
    )
    assert isinstance(outcomes[0], LeaseLost) and outcomes[0].reason is LeaseLossReason.EXPIRED
    assert outcomes[1] == {"job_id": early.job_id, "state": "done", "copies": 1}
    assert len(claimed) == 1
    assert await state_of(b, early.job_id) == (JobState.DONE, OrderState.DONE, 1)
    assert await refusals(b) == 1
