"""An order from quote to done on the in-memory service: coins reserved on confirm, each
delivered copy charged once, completion answered from its receipt when retried."""

import pytest

from videocopies.application import use_cases as uc
from videocopies.application.errors import NotFound
from videocopies.domain.coins import InsufficientCoins
from videocopies.domain.jobs import JobState, LeaseLost
from videocopies.domain.orders import CopyState, OrderState
from videocopies.domain.pricing import QuoteAlreadyUsed, QuoteForged, UnsupportedCopyCount
from videocopies.domain.receipts import ReceiptConflict
from videocopies.domain.shared import UserId

USER, OTHER_USER = UserId(1001), UserId(2002)


async def test_a_quote_is_stored_as_a_quoted_order_at_the_current_tariff(shop):
    quote = await shop.quote(copies=5)

    assert (quote.copies, quote.price_per_copy, quote.total, quote.tariff_version) == (5, 4, 20, 1)
    assert shop.order_state(quote.quote_id) is OrderState.QUOTED


async def test_no_order_is_stored_for_a_number_of_copies_not_offered(shop):
    with pytest.raises(UnsupportedCopyCount):
        await shop.quote(copies=3)

    assert shop.store.orders == {}


async def test_confirming_reserves_the_price_and_queues_a_job_with_a_plan_per_copy(shop):
    await shop.grant(50)

    order_id = await shop.order(copies=5)

    assert shop.order_state(order_id) is OrderState.CONFIRMED
    assert shop.figures() == (30, 20, 0, 0)
    job = shop.job_of(order_id)
    assert job.state is JobState.QUEUED
    assert [p.copy_index for p in job.plans] == [0, 1, 2, 3, 4]
    assert shop.notifier.wakeups == 1


async def test_a_quote_confirms_once(shop):
    await shop.grant(50)
    quote = await shop.quote()
    confirm = shop.cases.confirm_order()
    await confirm(uc.ConfirmOrderCommand(USER, quote.quote_id, quote.token))

    with pytest.raises(QuoteAlreadyUsed):
        await confirm(uc.ConfirmOrderCommand(USER, quote.quote_id, quote.token))

    assert shop.figures() == (30, 20, 0, 0)
    assert len(shop.store.jobs) == 1


async def test_a_confirm_with_a_wrong_token_changes_nothing(shop):
    await shop.grant(50)
    quote = await shop.quote()

    with pytest.raises(QuoteForged):
        await shop.cases.confirm_order()(uc.ConfirmOrderCommand(USER, quote.quote_id, "A" * 22))

    assert shop.order_state(quote.quote_id) is OrderState.QUOTED
    assert shop.figures() == (50, 0, 0, 0)


async def test_a_confirm_without_enough_coins_is_refused_and_the_quote_stays_usable(shop):
    await shop.grant(10)
    quote = await shop.quote()
    confirm = shop.cases.confirm_order()

    with pytest.raises(InsufficientCoins) as refused:
        await confirm(uc.ConfirmOrderCommand(USER, quote.quote_id, quote.token))

    assert refused.value.short_by == 10
    assert shop.order_state(quote.quote_id) is OrderState.QUOTED
    assert shop.store.jobs == {}
    await shop.grant(10)
    assert await confirm(uc.ConfirmOrderCommand(USER, quote.quote_id, quote.token)) == quote.quote_id


async def test_another_users_order_is_not_found(shop):
    await shop.grant(50, user=OTHER_USER)
    quote = await shop.quote(user=USER)

    with pytest.raises(NotFound) as refused:
        await shop.cases.confirm_order()(uc.ConfirmOrderCommand(OTHER_USER, quote.quote_id, quote.token))

    assert (refused.value.kind, refused.value.key) == ("order", quote.quote_id)
    assert shop.order_state(quote.quote_id) is OrderState.QUOTED


async def test_an_order_from_quote_to_done_charges_each_delivered_copy_once(shop):
    await shop.grant(50)
    order_id = await shop.order(copies=5)

    job = await shop.claim_one()
    assert (job.order_id, job.attempt, job.source_key) == (order_id, 1, "sources/u/clip.mp4")
    assert [i for i, _ in job.remaining] == [0, 1, 2, 3, 4]
    assert shop.order_state(order_id) is OrderState.RUNNING

    assert await shop.checkpoint(job, 0) is True
    (ready,) = shop.outbox("copy_ready")
    assert ready.user_id == USER
    assert ready.payload == {
        "order_id": order_id, "index": 0, "copies": 5, "object_key": f"copies/{order_id}/0.mp4",
        "size": 1_000_000, "sha256": "a" * 64,
    }

    assert await shop.deliver(order_id, 0) == 4
    assert await shop.deliver(order_id, 0) == 0  # the delivery reported again
    assert shop.figures() == (30, 16, 4, 0)

    for index in (1, 2, 3, 4):
        await shop.checkpoint(job, index)
    result = await shop.complete(job, receipt_id="complete-1")

    assert result == {"job_id": job.job_id, "state": "done", "copies": 5}
    assert shop.order_state(order_id) is OrderState.DONE
    assert shop.job_of(order_id).state is JobState.DONE
    (closed,) = shop.outbox("order_closed")
    # Every copy rendered: one charged already, four as their deliveries are reported.
    assert closed.payload == {
        "order_id": order_id, "state": "done", "copies": 5, "charged": 4, "pending": 16, "released": 0,
        "reason": None, "made": 5,
    }
    assert shop.figures() == (30, 16, 4, 0)  # rendered copies stay reserved until delivered

    for index in (1, 2, 3, 4):
        assert await shop.deliver(order_id, index) == 4
    assert shop.figures() == (30, 0, 20, 0)
    assert [c.state for c in shop.store.orders[order_id].copies] == [CopyState.DELIVERED] * 5


async def test_a_repeated_checkpoint_queues_the_copy_once(shop):
    await shop.grant(50)
    await shop.order()
    job = await shop.claim_one()

    assert await shop.checkpoint(job, 2) is True
    assert await shop.checkpoint(job, 2) is False

    assert [m.payload["index"] for m in shop.outbox("copy_ready")] == [2]


async def test_a_retried_completion_gets_the_stored_answer_and_a_different_one_is_a_conflict(shop):
    await shop.grant(50)
    order_id = await shop.order()
    job = await shop.claim_one()
    await shop.checkpoint_all(job)
    first = await shop.complete(job, receipt_id="complete-1")

    retried = await shop.complete(job, receipt_id="complete-1")
    with pytest.raises(ReceiptConflict) as refused:
        await shop.cases.complete_job()(uc.CompleteJobCommand(job.job_id, "another-token", "complete-1"))

    assert retried == first
    assert refused.value.receipt_id == "complete-1"
    assert len(shop.outbox("order_closed")) == 1
    assert shop.order_state(order_id) is OrderState.DONE
    assert len(shop.store.refusals) == 0


async def test_completing_a_finished_job_under_a_new_receipt_is_a_refused_write(shop):
    await shop.grant(50)
    await shop.order()
    job = await shop.claim_one()
    await shop.checkpoint_all(job)
    await shop.complete(job, receipt_id="complete-1")

    with pytest.raises(LeaseLost):
        await shop.complete(job, receipt_id="complete-2")

    assert [r.operation for r in shop.store.refusals] == ["complete"]


async def test_a_delivery_for_an_unknown_order_is_not_found(shop):
    with pytest.raises(NotFound):
        await shop.deliver("no-such-order", 0)


async def test_a_done_order_whose_copies_were_all_delivered_leaves_its_reservation_closed(shop):
    await shop.grant(50)
    order_id = await shop.order(copies=1)
    job = await shop.claim_one()
    await shop.checkpoint(job, 0)
    await shop.deliver(order_id, 0)

    await shop.complete(job)

    assert shop.order_state(order_id) is OrderState.DONE
    reservation = shop.store.accounts[USER].reservation(order_id)
    assert reservation is not None and reservation.held == 0
    assert reservation.open is False


async def test_a_copy_that_cannot_be_delivered_is_never_charged_and_its_coins_come_back(shop) -> None:  # type: ignore[no-untyped-def]
    await shop.grant(50)
    order_id = await shop.order(5)
    job = await shop.claim_one()
    await shop.checkpoint_all(job)
    await shop.complete(job)
    await shop.deliver(order_id, 0)
    assert shop.figures() == (30, 16, 4, 0)
    # The user blocked the bot: edge gives up on copy 2, and copy 2 alone.
    give_up = shop.cases.give_up_delivery()
    assert await give_up(uc.RecordDeliveryCommand(order_id, 2)) == 4
    assert await give_up(uc.RecordDeliveryCommand(order_id, 2)) == 0  # a repeated report changes nothing
    assert await shop.deliver(order_id, 2) == 0  # nor does a late delivery report
    assert shop.figures() == (34, 12, 4, 0)
