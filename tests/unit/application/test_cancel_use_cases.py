"""Cancel as a protocol: a queued job closes at once; a running one settles when its worker
acknowledges or its lease runs out. Undelivered copies are never charged."""

from datetime import timedelta

import pytest

from videocopies.application import use_cases as uc
from videocopies.application.errors import NotFound
from videocopies.domain.jobs import JobState
from videocopies.domain.orders import CopyState, OrderState
from videocopies.domain.shared import UserId

USER, OTHER_USER = UserId(1001), UserId(2002)
LEASE_TTL = timedelta(seconds=30)


async def test_cancelling_an_order_whose_job_is_still_queued_settles_at_once(shop):
    await shop.grant(50)
    order_id = await shop.order()

    state = await shop.cancel(order_id)

    assert state is OrderState.CANCELLED
    assert shop.job_of(order_id).state is JobState.CANCELLED
    assert shop.figures() == (50, 0, 0, 0)
    (closed,) = shop.outbox("order_closed")
    assert closed.payload == {
        "order_id": order_id, "state": "cancelled", "copies": 5, "charged": 0, "pending": 0, "released": 20,
        "reason": None, "delivered": 0,
    }
    assert await shop.claim() == []


async def started_with_one_delivered(shop):
    """A running order of 5: two copies rendered, the first delivered and charged."""
    await shop.grant(50)
    order_id = await shop.order()
    job = await shop.claim_one()
    await shop.checkpoint(job, 0)
    await shop.checkpoint(job, 1)
    await shop.deliver(order_id, 0)
    return order_id, job


async def test_cancelling_a_running_order_asks_the_worker_to_stop_and_holds_the_coins(shop):
    order_id, job = await started_with_one_delivered(shop)

    state = await shop.cancel(order_id)

    assert state is OrderState.CANCELLING
    assert shop.figures() == (30, 16, 4, 0)
    renewed = await shop.cases.renew_lease()(uc.RenewLeaseCommand(job.job_id, job.token))
    assert renewed.cancel_requested is True
    assert shop.outbox("order_closed") == []


async def test_a_running_order_settles_when_the_worker_acknowledges_the_cancel(shop):
    order_id, job = await started_with_one_delivered(shop)
    await shop.cancel(order_id)

    await shop.cases.acknowledge_cancel()(job.job_id, job.token)

    assert shop.order_state(order_id) is OrderState.CANCELLED
    assert shop.job_of(order_id).state is JobState.CANCELLED
    assert shop.figures() == (46, 0, 4, 0)
    (closed,) = shop.outbox("order_closed")
    assert (closed.payload["charged"], closed.payload["released"]) == (4, 16)
    # the rendered copy was on its way when the user cancelled: it is not charged
    assert await shop.deliver(order_id, 1) == 0
    assert shop.figures() == (46, 0, 4, 0)
    copies = [c.state for c in shop.store.orders[order_id].copies]
    assert copies == [CopyState.DELIVERED] + [CopyState.DROPPED] * 4


async def test_a_running_order_settles_when_the_cancelled_workers_lease_runs_out(shop):
    order_id, job = await started_with_one_delivered(shop)
    await shop.cancel(order_id)
    shop.clock.advance(LEASE_TTL - timedelta(seconds=1))
    assert await shop.cases.expire_leases()() == 0

    shop.clock.advance(timedelta(seconds=1))
    expired = await shop.cases.expire_leases()()

    assert expired == 1
    assert shop.order_state(order_id) is OrderState.CANCELLED
    assert shop.job_of(order_id).state is JobState.CANCELLED
    assert shop.figures() == (46, 0, 4, 0)
    assert await shop.claim() == []


async def test_a_cancel_of_a_closed_order_reports_its_state_and_changes_nothing(shop):
    await shop.grant(50)
    order_id = await shop.order()
    await shop.cancel(order_id)

    assert await shop.cancel(order_id) is OrderState.CANCELLED
    assert shop.figures() == (50, 0, 0, 0)
    assert len(shop.outbox("order_closed")) == 1


async def test_another_user_cannot_cancel_an_order(shop):
    await shop.grant(50)
    order_id = await shop.order()

    with pytest.raises(NotFound):
        await shop.cancel(order_id, user=OTHER_USER)

    assert shop.order_state(order_id) is OrderState.CONFIRMED
    assert shop.figures() == (30, 20, 0, 0)
