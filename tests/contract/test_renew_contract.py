"""A renewal behaves the same on every backend: PostgreSQL renews a live lease in one round trip
(`PostgresLeaseRenewals`), memory through the domain (`Job.renew`); a renewal refused takes the
whole path on both, which says why and counts a zombie's."""

from __future__ import annotations

from datetime import timedelta

import pytest

from videocopies.application import use_cases as uc
from videocopies.application.errors import NotFound
from videocopies.domain.jobs import LeaseLossReason, LeaseLost
from videocopies.domain.shared import JobId, OwnerToken, WorkerId

from .conftest import Backend
from .test_use_cases_contract import artifact, confirmed_order

TTL = timedelta(seconds=30)


async def _claimed(b: Backend, worker: str = "a") -> uc.ClaimedJob:
    await confirmed_order(b)
    (job,) = await b.cases.claim_job()(uc.ClaimJobCommand(WorkerId(worker)))
    return job


async def _refusals(b: Backend) -> int:
    async with b.new_uow() as uow:
        return await uow.refusals.count()


async def test_a_live_lease_runs_ttl_from_each_renewal_and_the_holder_writes_on(backend: Backend) -> None:
    b = backend
    job = await _claimed(b)
    renew = b.cases.renew_lease()
    for _ in range(3):  # 60 s in all: past the first lease, never past a renewed one
        b.clock.advance(timedelta(seconds=20))
        renewed = await renew(uc.RenewLeaseCommand(job.job_id, job.token, WorkerId("a")))
        assert (renewed.lease_until, renewed.cancel_requested) == (b.clock.now() + TTL, False)
    assert await b.cases.claim_job()(uc.ClaimJobCommand(WorkerId("b"))) == []
    async with b.new_uow() as uow:
        held = await uow.jobs.get(job.job_id)
        assert held is not None and held.lease is not None
        assert held.lease.lease_until == b.clock.now() + TTL
    # The job's version moved with each renewal: the holder's next writes still go through.
    await b.cases.checkpoint_copy()(uc.CheckpointCopyCommand(job.job_id, job.token, 0, artifact(0)))
    assert await _refusals(b) == 0


async def test_a_renewal_says_when_the_user_asked_to_cancel(backend: Backend) -> None:
    b = backend
    job = await _claimed(b)
    async with b.new_uow() as uow:
        order = await uow.orders.get(job.order_id)
        assert order is not None
    await b.cases.cancel_order()(uc.CancelOrderCommand(order.user_id, job.order_id))
    assert (await b.cases.renew_lease()(uc.RenewLeaseCommand(job.job_id, job.token))).cancel_requested


@pytest.mark.parametrize("how", ["stale token", "another worker", "lapsed", "taken over", "done"])
async def test_a_renewal_not_held_is_refused_with_its_reason_counted_and_changes_nothing(
    backend: Backend, how: str
) -> None:
    b = backend
    job = await _claimed(b)
    token, worker, reason = job.token, WorkerId("a"), LeaseLossReason.STALE_TOKEN
    if how == "stale token":
        token = OwnerToken("not-the-token")
    elif how == "another worker":
        worker, reason = WorkerId("b"), LeaseLossReason.NOT_OWNER
    elif how == "lapsed":
        b.clock.advance(timedelta(seconds=31))
        reason = LeaseLossReason.EXPIRED
    elif how == "taken over":
        b.clock.advance(timedelta(seconds=31))
        (again,) = await b.cases.claim_job()(uc.ClaimJobCommand(WorkerId("b")))
        assert again.job_id == job.job_id
    else:
        for index in range(5):
            await b.cases.checkpoint_copy()(uc.CheckpointCopyCommand(job.job_id, job.token, index, artifact(index)))
        await b.cases.complete_job()(uc.CompleteJobCommand(job.job_id, job.token, "r-done"))
        reason = LeaseLossReason.NOT_LEASED
    async with b.new_uow() as uow:
        before = await uow.jobs.get(job.job_id)
        assert before is not None
        version, lease = before.version, before.lease

    with pytest.raises(LeaseLost) as refused:
        await b.cases.renew_lease()(uc.RenewLeaseCommand(job.job_id, token, worker))

    assert refused.value.reason is reason
    assert await _refusals(b) == 1
    async with b.new_uow() as uow:
        after = await uow.jobs.get(job.job_id)
        assert after is not None and (after.version, after.lease) == (version, lease)


async def test_renewing_a_job_that_does_not_exist_is_not_found(backend: Backend) -> None:
    with pytest.raises(NotFound):
        await backend.cases.renew_lease()(uc.RenewLeaseCommand(JobId("no-such-job"), OwnerToken("t")))
