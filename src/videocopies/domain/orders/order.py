"""The order: what the user bought, each copy's progress, and what is owed for it."""

from __future__ import annotations

import enum
from datetime import datetime

import attrs

from videocopies.domain.pricing import PricingPolicy, Quote, QuoteAlreadyUsed, QuoteForged, QuoteKeys
from videocopies.domain.shared import DomainError, DomainEvent, OrderId, UserId


class OrderState(enum.Enum):
    QUOTED = "quoted"
    CONFIRMED = "confirmed"
    RUNNING = "running"
    DONE = "done"
    CANCELLING = "cancelling"
    CANCELLED = "cancelled"
    FAILED = "failed"


FINAL_STATES = frozenset({OrderState.DONE, OrderState.CANCELLED, OrderState.FAILED})


class CopyState(enum.Enum):
    PENDING = "pending"
    RENDERED = "rendered"
    DELIVERED = "delivered"
    DROPPED = "dropped"  # cancelled, failed or undeliverable: never charged


@attrs.define(slots=False, eq=False)
class OrderCopy:
    index: int
    state: CopyState = CopyState.PENDING
    object_key: str | None = None


@attrs.define
class OrderNotInState(DomainError):
    order_id: OrderId
    state: OrderState
    action: str


@attrs.define
class CopyNotRendered(DomainError):
    order_id: OrderId
    index: int


@attrs.define
class NoSuchCopy(DomainError):
    order_id: OrderId
    index: int


@attrs.frozen
class OrderConfirmed(DomainEvent):
    order_id: OrderId
    user_id: UserId
    total: int


@attrs.frozen
class CopyReady(DomainEvent):
    order_id: OrderId
    user_id: UserId
    index: int
    object_key: str


@attrs.frozen
class OrderClosed(DomainEvent):
    order_id: OrderId
    user_id: UserId
    state: OrderState
    charged: int
    released: int


@attrs.define(slots=False, eq=False)
class Order:
    """An order is paid copy by copy: each delivered copy is charged once, however often
    its delivery is reported; a cancelled or failed order charges nothing for the rest."""

    order_id: OrderId
    quote: Quote
    seed: int
    created_at: datetime
    state: OrderState = OrderState.QUOTED
    copies: list[OrderCopy] = attrs.Factory(list)
    failure_reason: str | None = None
    version: int = 0
    events: list[DomainEvent] = attrs.Factory(list)

    @classmethod
    def from_quote(cls, quote: Quote, seed: int, now: datetime) -> Order:
        copies = [OrderCopy(i) for i in range(quote.copies)]
        return cls(quote.quote_id, quote, seed, now, copies=copies)

    @property
    def user_id(self) -> UserId:
        return self.quote.user_id

    @property
    def price_per_copy(self) -> int:
        return self.quote.price_per_copy

    @property
    def total(self) -> int:
        return self.quote.total

    @property
    def is_final(self) -> bool:
        return self.state in FINAL_STATES

    @property
    def charged(self) -> int:
        return self.price_per_copy * self.count(CopyState.DELIVERED)

    def count(self, state: CopyState) -> int:
        return sum(1 for c in self.copies if c.state is state)

    def confirm(
        self, presented: Quote, keys: QuoteKeys, now: datetime, policy: PricingPolicy, user_id: UserId
    ) -> None:
        """Accept the quote once: genuine, the user's own, unexpired, on an honoured tariff."""
        if type(presented) is not type(self.quote) or presented.terms() != self.quote.terms():
            raise QuoteForged(presented.quote_id)
        presented.authenticate(keys, user_id)
        if self.state is not OrderState.QUOTED:
            raise QuoteAlreadyUsed(self.order_id)
        presented.check_terms(now, policy)
        self.state = OrderState.CONFIRMED
        self._changed(OrderConfirmed(self.order_id, self.user_id, self.total))

    def start(self) -> None:
        if self.state is OrderState.CONFIRMED:
            self.state = OrderState.RUNNING
            self._changed()
        elif self.state not in (OrderState.RUNNING, OrderState.CANCELLING):
            raise OrderNotInState(self.order_id, self.state, "start")

    def copy_rendered(self, index: int, object_key: str) -> bool:
        """Record a finished copy; True when it should now be sent to the user."""
        copy = self._copy(index)
        if copy.state is not CopyState.PENDING or self.state not in (
            OrderState.CONFIRMED, OrderState.RUNNING,
        ):
            return False
        copy.state, copy.object_key = CopyState.RENDERED, object_key
        self.start()
        self._changed(CopyReady(self.order_id, self.user_id, index, object_key))
        return True

    def copy_given_up(self, index: int) -> int:
        """A copy that could not be made well enough is dropped before it is sent: returns the
        coins to release (its price), or 0 when it was already settled or the order stopped."""
        copy = self._copy(index)
        if copy.state is not CopyState.PENDING or self.state not in (OrderState.CONFIRMED, OrderState.RUNNING):
            return 0
        copy.state = CopyState.DROPPED
        self.start()
        self._changed()
        return self.price_per_copy

    def record_delivery(self, index: int) -> int:
        """The coins to debit for this delivery report: the copy's price the first time, else 0."""
        copy = self._copy(index)
        if copy.state is CopyState.PENDING:
            raise CopyNotRendered(self.order_id, index)
        if copy.state is not CopyState.RENDERED:
            return 0
        copy.state = CopyState.DELIVERED
        self._changed()
        return self.price_per_copy

    def give_up_delivery(self, index: int) -> int:
        """A rendered copy that cannot reach the user is dropped; returns the coins to release."""
        copy = self._copy(index)
        if copy.state is not CopyState.RENDERED:
            return 0
        copy.state = CopyState.DROPPED
        self._changed()
        return self.price_per_copy

    def complete(self) -> int:
        """All copies rendered: the order is done; rendered copies still await delivery.
        A job finishing after a cancel request closes the order as cancelled."""
        if self.state is OrderState.CANCELLING:
            return self.finish_cancel()
        self._expect("complete", OrderState.CONFIRMED, OrderState.RUNNING)
        if missing := [c.index for c in self.copies if c.state is CopyState.PENDING]:
            raise CopyNotRendered(self.order_id, missing[0])
        self.state = OrderState.DONE
        self._changed(OrderClosed(self.order_id, self.user_id, self.state, self.charged, 0))
        return 0

    def request_cancel(self) -> None:
        """Stop: every copy not yet delivered is dropped and will not be charged."""
        if self.state is OrderState.CANCELLING:
            return
        self._expect("cancel", OrderState.CONFIRMED, OrderState.RUNNING)
        self._drop(CopyState.PENDING, CopyState.RENDERED)
        self.state = OrderState.CANCELLING
        self._changed()

    def finish_cancel(self) -> int:
        """The worker has stopped (or never started): close and return the coins to release."""
        self._expect("finish cancel", OrderState.CANCELLING)
        self.state = OrderState.CANCELLED
        released = self.total - self.charged
        self._changed(OrderClosed(self.order_id, self.user_id, self.state, self.charged, released))
        return released

    def fail(self, reason: str) -> int:
        """Give up: copies not rendered are dropped; rendered ones are still delivered and paid."""
        if self.state is OrderState.CANCELLING:
            return self.finish_cancel()
        self._expect("fail", OrderState.CONFIRMED, OrderState.RUNNING)
        dropped = self._drop(CopyState.PENDING)
        self.state, self.failure_reason = OrderState.FAILED, reason
        released = dropped * self.price_per_copy
        self._changed(OrderClosed(self.order_id, self.user_id, self.state, self.charged, released))
        return released

    def _drop(self, *states: CopyState) -> int:
        dropped = [c for c in self.copies if c.state in states]
        for copy in dropped:
            copy.state = CopyState.DROPPED
        return len(dropped)

    def _expect(self, action: str, *states: OrderState) -> None:
        if self.state not in states:
            raise OrderNotInState(self.order_id, self.state, action)

    def _copy(self, index: int) -> OrderCopy:
        if not 0 <= index < len(self.copies):
            raise NoSuchCopy(self.order_id, index)
        return self.copies[index]

    def _changed(self, event: DomainEvent | None = None) -> None:
        self.version += 1
        if event is not None:
            self.events.append(event)
