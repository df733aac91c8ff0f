"""The order: confirmed once from its quote, paid copy by delivered copy, and closed as done,
cancelled or failed without ever charging for a copy the user did not get."""

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import attrs
import pytest

from videocopies.domain.orders import (
    CopyNotRendered,
    CopyReady,
    CopyState,
    NoSuchCopy,
    Order,
    OrderClosed,
    OrderConfirmed,
    OrderNotInState,
    OrderState,
)
from videocopies.domain.pricing import (
    PricingPolicy,
    Quote,
    QuoteAlreadyUsed,
    QuoteExpired,
    QuoteForged,
    QuoteKeys,
    QuoteNotYours,
    Tariff,
    TariffRetired,
)
from videocopies.domain.shared import OrderId, UserId

T0 = datetime(2026, 1, 1, 12, tzinfo=UTC)
TTL = timedelta(minutes=10)
KEYS = QuoteKeys.of(b"quote-secret" * 3)
USER = UserId(1001)
TARIFF = Tariff(version=1, per_copy={1: 5, 3: 4, 5: 4})
POLICY = PricingPolicy(TARIFF)
PRICE, TOTAL = 4, 12  # three copies at 4 coins


def quote() -> Quote:
    return Quote.issue(OrderId("order-1"), USER, "sources/u/clip.mp4", 3, TARIFF, T0, TTL, KEYS)


def quoted() -> Order:
    return Order.from_quote(quote(), seed=7, now=T0)


def confirmed() -> Order:
    order = quoted()
    order.confirm(quote(), KEYS, T0, POLICY, USER)
    return order


def running() -> Order:
    order = confirmed()
    order.start()
    return order


def with_copies(*states: str) -> Order:
    """A running order whose copies are 'pending', 'rendered' or 'delivered'."""
    order = running()
    for index, state in enumerate(states):
        if state in ("rendered", "delivered"):
            order.copy_rendered(index, f"copies/order-1/{index}.mp4")
        if state == "delivered":
            order.record_delivery(index)
    return order


def copy_states(order: Order) -> list[CopyState]:
    return [c.state for c in order.copies]


def cancelling() -> Order:
    order = with_copies("delivered", "rendered", "pending")
    order.request_cancel()
    return order


def done() -> Order:
    order = with_copies("rendered", "rendered", "rendered")
    order.complete()
    return order


def cancelled() -> Order:
    order = cancelling()
    order.finish_cancel()
    return order


def failed() -> Order:
    order = running()
    order.fail("boom")
    return order


# --- from quote to confirmed --------------------------------------------------------------


def test_an_order_starts_quoted_with_every_copy_pending():
    order = quoted()

    assert order.state is OrderState.QUOTED
    assert copy_states(order) == [CopyState.PENDING] * 3
    assert (order.user_id, order.price_per_copy, order.total, order.charged) == (USER, PRICE, TOTAL, 0)


def test_confirming_a_genuine_quote_accepts_it():
    order = quoted()

    order.confirm(quote(), KEYS, T0, POLICY, USER)

    assert order.state is OrderState.CONFIRMED
    assert order.events == [OrderConfirmed(OrderId("order-1"), USER, TOTAL)]


def test_a_quote_is_used_once():
    order = confirmed()
    version = order.version

    with pytest.raises(QuoteAlreadyUsed):
        order.confirm(quote(), KEYS, T0, POLICY, USER)

    assert order.state is OrderState.CONFIRMED
    assert order.version == version


@pytest.mark.parametrize(
    ("presented", "refusal", "now", "policy", "user"),
    [
        (lambda q: attrs.evolve(q, token="A" * 22), QuoteForged, T0, POLICY, USER),
        (lambda q: attrs.evolve(q, price_per_copy=1, total=3), QuoteForged, T0, POLICY, USER),
        (lambda q: q, QuoteNotYours, T0, POLICY, UserId(2002)),
        (lambda q: q, QuoteExpired, T0 + TTL, POLICY, USER),
        (lambda q: q, TariffRetired, T0, PricingPolicy(Tariff(version=2, per_copy={3: 9})), USER),
    ],
    ids=["wrong-token", "other-price", "not-yours", "expired", "retired-tariff"],
)
def test_a_refused_confirmation_leaves_the_order_quoted(presented, refusal, now, policy, user):
    order = quoted()

    with pytest.raises(refusal):
        order.confirm(presented(quote()), KEYS, now, policy, user)

    assert order.state is OrderState.QUOTED
    assert order.events == []


def test_a_forged_quote_cannot_pass_as_used_either():
    order = confirmed()

    with pytest.raises(QuoteForged):
        order.confirm(attrs.evolve(quote(), token="A" * 22), KEYS, T0, POLICY, USER)


# --- running ------------------------------------------------------------------------------


def test_start_runs_a_confirmed_order_and_is_a_no_op_once_running():
    order = confirmed()

    order.start()
    version = order.version
    order.start()

    assert order.state is OrderState.RUNNING
    assert order.version == version


def test_a_rendered_copy_is_announced_once():
    order = confirmed()

    first = order.copy_rendered(1, "copies/order-1/1.mp4")
    again = order.copy_rendered(1, "copies/order-1/1-again.mp4")

    assert (first, again) == (True, False)
    assert order.state is OrderState.RUNNING
    assert copy_states(order) == [CopyState.PENDING, CopyState.RENDERED, CopyState.PENDING]
    assert order.copies[1].object_key == "copies/order-1/1.mp4"
    assert [e for e in order.events if isinstance(e, CopyReady)] == [
        CopyReady(OrderId("order-1"), USER, 1, "copies/order-1/1.mp4")
    ]


@pytest.mark.parametrize("index", [-1, 3])
def test_a_copy_the_order_does_not_have_is_refused(index):
    order = running()

    for action in (
        lambda: order.copy_rendered(index, "k"),
        lambda: order.record_delivery(index),
        lambda: order.give_up_delivery(index),
    ):
        with pytest.raises(NoSuchCopy) as refused:
            action()
        assert refused.value.index == index


def test_a_copy_is_not_announced_for_an_order_that_is_not_running():
    quoted_order, stopping = quoted(), cancelling()

    assert quoted_order.copy_rendered(0, "k") is False
    assert stopping.copy_rendered(2, "k") is False
    assert copy_states(stopping)[2] is CopyState.DROPPED


# --- paying for deliveries ----------------------------------------------------------------


def test_a_delivered_copy_is_charged_once_however_often_it_is_reported():
    order = with_copies("rendered", "pending", "pending")

    charges = [order.record_delivery(0), order.record_delivery(0), order.record_delivery(0)]

    assert charges == [PRICE, 0, 0]
    assert order.charged == PRICE
    assert copy_states(order)[0] is CopyState.DELIVERED


def test_the_delivery_of_a_copy_not_yet_rendered_is_refused():
    order = with_copies("rendered", "pending", "pending")

    with pytest.raises(CopyNotRendered) as refused:
        order.record_delivery(1)

    assert refused.value.index == 1
    assert order.charged == 0


def test_a_dropped_copy_costs_nothing_when_its_delivery_is_reported():
    order = cancelling()

    assert order.record_delivery(1) == 0
    assert order.charged == PRICE  # only the copy delivered before the cancel


def test_a_copy_that_cannot_reach_the_user_is_dropped_and_its_price_released():
    order = with_copies("delivered", "rendered", "pending")

    assert order.give_up_delivery(1) == PRICE
    assert order.give_up_delivery(1) == 0  # already dropped
    assert order.give_up_delivery(0) == 0  # delivered: paid for
    assert order.give_up_delivery(2) == 0  # pending: not sent yet
    assert copy_states(order) == [CopyState.DELIVERED, CopyState.DROPPED, CopyState.PENDING]
    assert order.record_delivery(1) == 0


# --- closing ------------------------------------------------------------------------------


def test_complete_needs_every_copy_rendered():
    order = with_copies("rendered", "pending", "rendered")

    with pytest.raises(CopyNotRendered) as refused:
        order.complete()

    assert refused.value.index == 1
    assert order.state is OrderState.RUNNING


def test_a_completed_order_is_done_and_its_rendered_copies_are_still_paid_on_delivery():
    order = with_copies("delivered", "rendered", "rendered")

    released = order.complete()

    assert released == 0
    assert order.state is OrderState.DONE and order.is_final
    assert order.events[-1] == OrderClosed(OrderId("order-1"), USER, OrderState.DONE, PRICE, 0)
    assert order.record_delivery(1) == PRICE
    assert order.charged == 2 * PRICE


def test_cancel_drops_every_copy_not_yet_delivered():
    order = with_copies("delivered", "rendered", "pending")

    order.request_cancel()
    version = order.version
    order.request_cancel()  # asking twice changes nothing

    assert order.state is OrderState.CANCELLING
    assert copy_states(order) == [CopyState.DELIVERED, CopyState.DROPPED, CopyState.DROPPED]
    assert order.version == version


def test_finishing_a_cancel_returns_everything_not_charged():
    order = cancelling()

    released = order.finish_cancel()

    assert released == TOTAL - PRICE
    assert order.state is OrderState.CANCELLED
    assert order.events[-1] == OrderClosed(OrderId("order-1"), USER, OrderState.CANCELLED, PRICE, TOTAL - PRICE)


def test_a_confirmed_order_cancelled_before_any_work_returns_its_whole_price():
    order = confirmed()

    order.request_cancel()

    assert order.finish_cancel() == TOTAL
    assert copy_states(order) == [CopyState.DROPPED] * 3


def test_failing_drops_only_pending_copies_and_returns_their_price():
    order = with_copies("delivered", "rendered", "pending")

    released = order.fail("ffmpeg crashed")

    assert released == PRICE
    assert order.state is OrderState.FAILED
    assert order.failure_reason == "ffmpeg crashed"
    assert copy_states(order) == [CopyState.DELIVERED, CopyState.RENDERED, CopyState.DROPPED]
    assert order.events[-1] == OrderClosed(OrderId("order-1"), USER, OrderState.FAILED, PRICE, PRICE)
    assert order.record_delivery(1) == PRICE  # a rendered copy is still delivered and paid


def test_completing_a_cancelling_order_closes_it_as_cancelled():
    order = cancelling()

    released = order.complete()

    assert released == TOTAL - PRICE
    assert order.state is OrderState.CANCELLED


def test_failing_a_cancelling_order_closes_it_as_cancelled():
    order = cancelling()

    released = order.fail("worker gone")

    assert released == TOTAL - PRICE
    assert order.state is OrderState.CANCELLED
    assert order.failure_reason is None


ACTIONS: dict[str, Callable[[Order], object]] = {
    "start": lambda o: o.start(),
    "complete": lambda o: o.complete(),
    "cancel": lambda o: o.request_cancel(),
    "finish cancel": lambda o: o.finish_cancel(),
    "fail": lambda o: o.fail("x"),
}
INVALID = [
    (quoted, "start"), (quoted, "complete"), (quoted, "cancel"), (quoted, "finish cancel"), (quoted, "fail"),
    (confirmed, "finish cancel"), (running, "finish cancel"),
    *[(final, action) for final in (done, cancelled, failed) for action in ACTIONS],
]


@pytest.mark.parametrize(("make", "action"), INVALID, ids=[f"{m.__name__}-{a}" for m, a in INVALID])
def test_an_action_the_state_does_not_allow_is_refused(make, action):
    order = make()
    state, version = order.state, order.version

    with pytest.raises(OrderNotInState) as refused:
        ACTIONS[action](order)

    assert (refused.value.order_id, refused.value.state, refused.value.action) == ("order-1", state, action)
    assert (order.state, order.version) == (state, version)
