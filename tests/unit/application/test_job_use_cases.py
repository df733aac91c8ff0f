"""Workers and their jobs: claims, takeovers, retries and final failures; and the writes of a
worker that lost its lease, refused and counted."""

from datetime import timedelta

import pytest

from videocopies.application import use_cases as uc
from videocopies.domain.jobs import CheckpointConflict, JobState, LeaseLossReason, LeaseLost
from videocopies.domain.orders import CopyState, OrderState
from videocopies.domain.shared import UserId, WorkerId

USER = UserId(1001)
LEASE_TTL = timedelta(seconds=30)


# --- claiming -----------------------------------------------------------------------------


async def test_a_claim_takes_up_to_the_limit_oldest_first(shop):
    await shop.grant(50)
    first = await shop.order(copies=1)
    shop.clock.advance(timedelta(seconds=1))
    second = await shop.order(copies=5)
    shop.clock.advance(timedelta(seconds=1))
    third = await shop.order(copies=1)

    claimed = await shop.claim(limit=2)

    assert [c.order_id for c in claimed] == [first, second]
    assert len({c.token for c in claimed}) == 2
    assert all(c.lease_until == shop.clock.now() + LEASE_TTL for c in claimed)
    assert [len(c.remaining) for c in claimed] == [1, 5]
    assert [c.order_id for c in await shop.claim(worker="worker-b", limit=5)] == [third]
    assert await shop.claim(worker="worker-c", limit=5) == []


async def test_nothing_to_claim_gives_an_empty_list(shop):
    assert await shop.claim(limit=3) == []


async def test_an_expired_lease_is_taken_over_with_the_same_plans_for_the_copies_left(shop):
    await shop.grant(50)
    order_id = await shop.order()
    a = await shop.claim_one("worker-a")
    await shop.checkpoint(a, 0)
    await shop.checkpoint(a, 1)

    assert await shop.claim("worker-b") == []  # a's lease still runs
    shop.clock.advance(LEASE_TTL)
    b = await shop.claim_one("worker-b")

    assert (b.job_id, b.attempt) == (a.job_id, 2)
    assert b.token != a.token
    assert b.remaining == a.remaining[2:]
    job = shop.job_of(order_id)
    assert job.lease is not None and job.lease.worker_id == "worker-b"
    assert shop.order_state(order_id) is OrderState.RUNNING


async def test_a_takeover_on_the_last_attempt_fails_the_order_and_returns_the_unrendered_coins(shop):
    await shop.grant(50)
    order_id = await shop.order()
    for worker in ("worker-a", "worker-b", "worker-c"):
        job = await shop.claim_one(worker)
        if worker == "worker-a":
            await shop.checkpoint(job, 0)
        shop.clock.advance(LEASE_TTL)

    assert await shop.claim("worker-d") == []

    assert shop.job_of(order_id).state is JobState.FAILED
    assert shop.order_state(order_id) is OrderState.FAILED
    assert shop.figures() == (46, 4, 0, 0)  # copy 0 was rendered: still reserved for its delivery


async def test_the_sweep_takes_back_an_expired_lease_so_the_job_can_be_claimed_again(shop):
    await shop.grant(50)
    order_id = await shop.order()
    await shop.claim_one()
    wakeups = shop.notifier.wakeups
    shop.clock.advance(LEASE_TTL)

    assert await shop.cases.expire_leases()() == 1

    job = shop.job_of(order_id)
    assert (job.state, job.lease) == (JobState.QUEUED, None)
    assert shop.notifier.wakeups == wakeups + 1
    assert (await shop.claim_one("worker-b")).attempt == 2


# --- failing ------------------------------------------------------------------------------


async def test_a_retryable_failure_queues_the_job_again(shop):
    await shop.grant(50)
    order_id = await shop.order()
    job = await shop.claim_one()
    await shop.checkpoint(job, 0)

    result = await shop.fail(job, retryable=True)

    assert result == {"job_id": job.job_id, "state": "queued", "attempts": 1}
    assert shop.order_state(order_id) is OrderState.RUNNING
    assert shop.figures() == (30, 20, 0, 0)
    again = await shop.claim_one("worker-b")
    assert (again.attempt, [i for i, _ in again.remaining]) == (2, [1, 2, 3, 4])


async def test_a_final_failure_fails_the_order_and_returns_only_the_coins_of_copies_not_rendered(shop):
    await shop.grant(50)
    order_id = await shop.order()
    job = await shop.claim_one()
    await shop.checkpoint(job, 0)
    await shop.checkpoint(job, 1)
    await shop.deliver(order_id, 0)

    result = await shop.fail(job, retryable=False, reason="source is unreadable")

    assert result == {"job_id": job.job_id, "state": "failed", "attempts": 1}
    assert shop.order_state(order_id) is OrderState.FAILED
    assert shop.figures() == (42, 4, 4, 0)  # 3 unrendered copies back; copy 1 still on its way
    (closed,) = shop.outbox("order_closed")
    assert closed.payload == {
        # copy 0 delivered, copy 1 on its way (charged when it arrives), the other three returned
        "order_id": order_id, "state": "failed", "copies": 5, "charged": 4, "pending": 4, "released": 12,
        "reason": "source_unreadable",  # a code of the list: the raw text stays on the job
        "delivered": 1,
    }
    assert await shop.deliver(order_id, 1) == 4
    assert shop.figures() == (42, 0, 8, 0)
    copies = [c.state for c in shop.store.orders[order_id].copies]
    assert copies == [CopyState.DELIVERED, CopyState.DELIVERED] + [CopyState.DROPPED] * 3


async def test_a_retryable_failure_on_the_last_attempt_is_final(shop):
    await shop.grant(50)
    order_id = await shop.order()
    for attempt in (1, 2, 3):
        job = await shop.claim_one()
        result = await shop.fail(job, retryable=True)
        assert result["attempts"] == attempt

    assert result["state"] == "failed"
    assert shop.order_state(order_id) is OrderState.FAILED
    assert shop.figures() == (50, 0, 0, 0)


async def test_a_retried_failure_report_gets_the_stored_answer(shop):
    await shop.grant(50)
    await shop.order()
    job = await shop.claim_one()
    command = uc.FailJobCommand(job.job_id, job.token, "crash", True, "fail-1")

    first = await shop.cases.fail_job()(command)
    second = await shop.cases.fail_job()(command)

    assert first == second == {"job_id": job.job_id, "state": "queued", "attempts": 1}
    assert len(shop.store.refusals) == 0


async def test_a_checkpoint_with_other_content_for_a_stored_copy_is_refused(shop):
    await shop.grant(50)
    await shop.order()
    job = await shop.claim_one()
    await shop.checkpoint(job, 0, sha="a")

    with pytest.raises(CheckpointConflict):
        await shop.checkpoint(job, 0, sha="b")

    assert len(shop.outbox("copy_ready")) == 1


# --- zombies ------------------------------------------------------------------------------


async def zombie_and_new_owner(shop):
    """Worker A hung past its lease; worker B took the job over."""
    await shop.grant(50)
    order_id = await shop.order()
    a = await shop.claim_one("worker-a")
    await shop.checkpoint(a, 0)
    shop.clock.advance(LEASE_TTL + timedelta(seconds=1))
    b = await shop.claim_one("worker-b")
    return order_id, a, b


def zombie_writes(shop, a):
    worker = WorkerId("worker-a")
    art = shop.artifact(a.order_id, 1, "z")
    return {
        "renew": lambda: shop.cases.renew_lease()(uc.RenewLeaseCommand(a.job_id, a.token, worker)),
        "checkpoint": lambda: shop.cases.checkpoint_copy()(
            uc.CheckpointCopyCommand(a.job_id, a.token, 1, art, worker)
        ),
        "complete": lambda: shop.cases.complete_job()(uc.CompleteJobCommand(a.job_id, a.token, "zombie-c", worker)),
        "fail": lambda: shop.cases.fail_job()(uc.FailJobCommand(a.job_id, a.token, "x", True, "zombie-f", worker)),
    }


async def test_every_write_of_a_worker_that_lost_its_lease_is_refused_and_counted(shop):
    order_id, a, b = await zombie_and_new_owner(shop)
    job_before = shop.job_of(order_id)
    outbox_before = list(shop.store.outbox.values())

    for operation, write in zombie_writes(shop, a).items():
        with pytest.raises(LeaseLost) as refused:
            await write()
        assert refused.value.reason is LeaseLossReason.STALE_TOKEN, operation

    assert [(r.operation, r.worker_id, r.reason) for r in shop.store.refusals] == [
        ("renew", "worker-a", "stale_token"),
        ("checkpoint", "worker-a", "stale_token"),
        ("complete", "worker-a", "stale_token"),
        ("fail", "worker-a", "stale_token"),
    ]
    async with shop.uow() as uow:
        assert await uow.refusals.count() == 4
    job = shop.job_of(order_id)
    assert job.version == job_before.version
    assert (job.state, job.lease.token, sorted(job.checkpoints)) == (JobState.LEASED, b.token, [0])
    assert list(shop.store.outbox.values()) == outbox_before
    assert shop.store.receipts == {}
    assert shop.order_state(order_id) is OrderState.RUNNING


async def test_a_write_after_the_lease_ran_out_is_refused_even_before_anyone_takes_over(shop):
    await shop.grant(50)
    order_id = await shop.order()
    a = await shop.claim_one()
    shop.clock.advance(LEASE_TTL)

    with pytest.raises(LeaseLost) as refused:
        await shop.checkpoint(a, 0)

    assert refused.value.reason is LeaseLossReason.EXPIRED
    assert [r.reason for r in shop.store.refusals] == ["expired"]
    assert shop.job_of(order_id).checkpoints == {}
    assert shop.outbox("copy_ready") == []


async def test_a_lapsed_last_attempt_does_not_use_up_the_claim(shop) -> None:
    """The job out of attempts is closed (and refunded); the worker still gets the queued one."""
    await shop.grant()
    first = await shop.order(copies=1)
    for attempt in range(3):
        await shop.claim_one(f"w{attempt}")
        shop.clock.advance(timedelta(seconds=31))
        if attempt < 2:
            await shop.cases.expire_leases()()
    second = await shop.order(copies=1)
    (claimed,) = await shop.claim("late-worker")
    assert claimed.order_id == second
    assert shop.store.orders[first].state is OrderState.FAILED


async def test_a_retried_cancel_acknowledgement_is_not_a_zombie(shop) -> None:
    await shop.grant()
    order_id = await shop.order()
    job = await shop.claim_one()
    await shop.cases.cancel_order()(uc.CancelOrderCommand(USER, order_id))
    await shop.cases.acknowledge_cancel()(job.job_id, job.token)
    await shop.cases.acknowledge_cancel()(job.job_id, job.token)
    assert shop.store.refusals == []
    assert shop.store.orders[order_id].state is OrderState.CANCELLED
