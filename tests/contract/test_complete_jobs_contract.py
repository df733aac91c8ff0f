"""Completions together behave the same on every backend: each job fenced on its own, a
refused one answered on its own while the rest commit, receipts replayed, never applied twice."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest

from videocopies.application import use_cases as uc
from videocopies.application.errors import NotFound
from videocopies.domain.coins import LotKind
from videocopies.domain.jobs import CopiesMissing, CopyArtifact, JobState, LeaseLossReason, LeaseLost
from videocopies.domain.orders import OrderState
from videocopies.domain.receipts import ReceiptConflict
from videocopies.domain.shared import JobId, UserId, WorkerId

from .conftest import Backend

WORKER = WorkerId("a")


async def rendered_jobs(
    b: Backend, users: range, copies: int = 1, render: bool = True, ttl: timedelta | None = None
) -> list[uc.ClaimedJob]:
    """One confirmed order per user, claimed by WORKER (for `ttl`, when given); every copy
    checkpointed when `render`."""
    for user in users:
        await b.cases.grant_coins()(uc.GrantCoinsCommand(UserId(user), LotKind.START, 50, timedelta(days=30)))
        quote = await b.cases.quote_order()(uc.QuoteOrderCommand(UserId(user), "sources/clip.mp4", copies))
        await b.cases.confirm_order()(uc.ConfirmOrderCommand(UserId(user), quote.quote_id, quote.token))
    claim = b.cases.claim_job() if ttl is None else uc.ClaimJob(b.uow, b.clock, b.service.gateways.ids(), ttl)
    claimed = await claim(uc.ClaimJobCommand(WORKER, limit=len(users)))
    assert len(claimed) == len(users)
    if render:
        for job in claimed:
            for index, _ in job.remaining:
                artifact = CopyArtifact(f"copies/{job.job_id}/{index}.mp4", 1000, f"{index:064x}", 3.0, 720, 1280)
                await b.cases.checkpoint_copy()(uc.CheckpointCopyCommand(job.job_id, job.token, index, artifact))
    return claimed


def command(job: uc.ClaimedJob, receipt: str | None = None, token: str | None = None) -> uc.CompleteJobCommand:
    return uc.CompleteJobCommand(job.job_id, token or job.token, receipt or f"complete:{job.job_id}", WORKER)


async def state_of(b: Backend, job_id: JobId) -> tuple[JobState, OrderState, int]:
    async with b.new_uow() as uow:
        job = await uow.jobs.get(job_id)
        order = await uow.orders.get(job.order_id)
        closed = [m for _, m in await uow.outbox.pending(100) if m.kind == "order_closed" and
                  m.payload["order_id"] == order.order_id]
        return job.state, order.state, len(closed)


async def one_lapsed_by_the_database(b: Backend) -> tuple[uc.ClaimedJob, uc.ClaimedJob]:
    """Two rendered jobs, the first on a lease the database's clock has passed while ours stood
    still (skipped on memory, which has no second clock)."""
    if b.name == "memory":
        pytest.skip("memory has no second clock: the domain's check is the only one")
    b.clock.set(datetime.now(UTC))
    (late,) = await rendered_jobs(b, range(1, 2), ttl=timedelta(seconds=2))
    (early,) = await rendered_jobs(b, range(2, 3))
    await asyncio.sleep(2.5)  # the database's clock passes the short lease; ours stands still
    return late, early


async def refusals(b: Backend) -> int:
    async with b.new_uow() as uow:
        return await uow.refusals.count()


async def test_a_refused_completion_leaves_the_rest_of_its_batch_to_commit(backend: Backend) -> None:
    b = backend
    good, stale, unfinished = await rendered_jobs(b, range(1, 4))
    missing = await rendered_jobs(b, range(4, 5), copies=5, render=False)
    outcomes = await b.cases.complete_job().together(
        [command(good), command(stale, token="not-the-token"), command(unfinished), command(missing[0]),
         uc.CompleteJobCommand(JobId("no-such-job"), good.token, "r-none", WORKER)]
    )
    assert outcomes[0] == {"job_id": good.job_id, "state": "done", "copies": 1}
    assert isinstance(outcomes[1], LeaseLost) and outcomes[1].reason is LeaseLossReason.STALE_TOKEN
    assert outcomes[2] == {"job_id": unfinished.job_id, "state": "done", "copies": 1}
    assert isinstance(outcomes[3], CopiesMissing) and outcomes[3].missing == (0, 1, 2, 3, 4)
    assert isinstance(outcomes[4], NotFound)
    assert await state_of(b, good.job_id) == (JobState.DONE, OrderState.DONE, 1)
    assert await state_of(b, stale.job_id) == (JobState.LEASED, OrderState.RUNNING, 0)
    assert await state_of(b, missing[0].job_id) == (JobState.LEASED, OrderState.RUNNING, 0)
    assert await refusals(b) == 1  # the zombie's write is counted, as a single one is
    # The stale token's owner can still complete with its real token.
    assert await b.cases.complete_job()(command(stale, receipt="retry")) == {
        "job_id": stale.job_id, "state": "done", "copies": 1
    }


async def test_a_lapsed_lease_never_completes_in_a_batch(backend: Backend) -> None:
    b = backend
    first, second = await rendered_jobs(b, range(1, 3))
    b.clock.advance(timedelta(seconds=31))
    (taken,) = await b.cases.claim_job()(uc.ClaimJobCommand(WorkerId("b"), limit=1))
    outcomes = await b.cases.complete_job().together([command(first), command(second)])
    assert all(isinstance(o, LeaseLost) for o in outcomes)
    assert {o.reason for o in outcomes} <= {LeaseLossReason.STALE_TOKEN, LeaseLossReason.EXPIRED}
    assert (await state_of(b, taken.job_id))[:2] == (JobState.LEASED, OrderState.RUNNING)
    assert await refusals(b) == 2


async def test_a_batch_is_answered_from_its_receipts_and_never_applied_twice(backend: Backend) -> None:
    b = backend
    jobs = await rendered_jobs(b, range(1, 4))
    together = b.cases.complete_job().together
    first = await together([command(job) for job in jobs])
    async with b.new_uow() as uow:
        before = [(await uow.accounts.get(UserId(u))).balance(b.clock.now()) for u in range(1, 4)]
    # The same batch again, one of them twice and one with another request under its receipt id.
    again = await together(
        [command(jobs[0]), command(jobs[1]), command(jobs[1]), command(jobs[2], token="forged")]
    )
    assert again[:3] == [first[0], first[1], first[1]]
    assert isinstance(again[3], ReceiptConflict)
    for job in jobs:
        assert await state_of(b, job.job_id) == (JobState.DONE, OrderState.DONE, 1)
    async with b.new_uow() as uow:
        assert [(await uow.accounts.get(UserId(u))).balance(b.clock.now()) for u in range(1, 4)] == before
    assert await refusals(b) == 0


async def test_one_receipt_twice_in_a_batch_applies_once(backend: Backend) -> None:
    b = backend
    (job,) = await rendered_jobs(b, range(1, 2))
    outcomes = await b.cases.complete_job().together([command(job), command(job), command(job, token="x")])
    assert outcomes[0] == outcomes[1] == {"job_id": job.job_id, "state": "done", "copies": 1}
    assert isinstance(outcomes[2], ReceiptConflict)
    assert await state_of(b, job.job_id) == (JobState.DONE, OrderState.DONE, 1)


async def test_concurrent_completions_each_get_their_own_answer(backend: Backend) -> None:
    b = backend
    jobs = await rendered_jobs(b, range(1, 9))
    complete = b.cases.complete_job()
    stale = command(jobs[-1], token="stale")
    answers = await asyncio.gather(
        *(complete(command(job)) for job in jobs[:-1]), complete(stale), complete(command(jobs[0])),
        return_exceptions=True,
    )
    assert answers[:7] == [{"job_id": job.job_id, "state": "done", "copies": 1} for job in jobs[:7]]
    assert isinstance(answers[7], LeaseLost)
    assert answers[8] == answers[0]  # the retry of the first, answered from its receipt
    for job in jobs[:-1]:
        assert await state_of(b, job.job_id) == (JobState.DONE, OrderState.DONE, 1)
    assert (await state_of(b, jobs[-1].job_id))[0] is JobState.LEASED
    if b.name != "memory":  # memory never waits, so nothing arrives while another commits
        assert complete.batches >= 1


async def test_the_database_fence_refuses_one_completion_and_commits_the_rest(backend: Backend) -> None:
    """The lease is checked again against the database's clock when the batch is written:
    one that ran out meanwhile is refused on its own, and the batch commits without it."""
    b = backend
    late, early = await one_lapsed_by_the_database(b)
    outcomes = await b.cases.complete_job().together([command(late), command(early)])
    assert outcomes[1] == {"job_id": early.job_id, "state": "done", "copies": 1}
    assert isinstance(outcomes[0], LeaseLost) and outcomes[0].reason is LeaseLossReason.EXPIRED
    assert (await state_of(b, late.job_id))[0] is JobState.LEASED
    assert await state_of(b, early.job_id) == (JobState.DONE, OrderState.DONE, 1)
    assert await refusals(b) == 1
