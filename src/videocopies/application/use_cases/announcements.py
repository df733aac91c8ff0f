"""What the user is told when their order or their coins change, in one place: use cases record
these events on their unit of work (`uow.record`), and the unit of work turns each into its
outbox row with the handler registered for its type below. The row is written in the
transaction of the change it announces, and its dedup key makes it once per change."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

import attrs

from videocopies.application.ports import OutboxMessage
from videocopies.domain.jobs import CopyArtifact
from videocopies.domain.orders import CopyState, Order, OrderState
from videocopies.domain.shared import DomainEvent, LotId, OrderId, UserId


@attrs.frozen
class CopyReadyToSend(DomainEvent):
    """A copy is stored and checked: it goes to its user now."""

    user_id: UserId
    order_id: OrderId
    index: int
    copies: int
    artifact: CopyArtifact


@attrs.frozen
class CopyGivenUp(DomainEvent):
    """A copy failed the quality gate on every render: its price went back to the lots."""

    user_id: UserId
    order_id: OrderId
    index: int
    copies: int
    reason: str
    tries: int
    returned: int


@attrs.frozen
class OrderSettled(DomainEvent):
    """An order reached its end and its coins are settled."""

    user_id: UserId
    order_id: OrderId
    state: OrderState
    copies: int
    charged: int
    pending: int  # rendered copies still on their way: charged as each arrives, returned if it cannot
    released: int
    reason: str | None
    made: int | None  # a done order may have fewer copies than were ordered (the quality gate)
    delivered: int | None = None  # copies the user got, for an order that ended early

    @classmethod
    def of(cls, order: Order, released: int) -> OrderSettled:
        done = order.state is OrderState.DONE
        return cls(
            order.user_id, order.order_id, order.state, len(order.copies), order.charged,
            order.price_per_copy * order.count(CopyState.RENDERED), released, order.failure_reason,
            order.count(CopyState.RENDERED) + order.count(CopyState.DELIVERED) if done else None,
            None if done else order.count(CopyState.DELIVERED),
        )


@attrs.frozen
class OrderProgressed(DomainEvent):
    """An order's copy is being rendered (`index`, `percent` done), or one more was delivered:
    the order's progress message is edited to show it."""

    user_id: UserId
    order_id: OrderId
    copies: int
    total: int
    delivered: int
    index: int | None = None
    percent: int | None = None

    @classmethod
    def of(cls, order: Order, index: int | None = None, percent: int | None = None) -> OrderProgressed:
        return cls(order.user_id, order.order_id, len(order.copies), order.total, order.count(CopyState.DELIVERED),
                   index, percent)


@attrs.frozen
class CoinsGranted(DomainEvent):
    """Coins given by hand (an operator, a campaign), with the reason they gave."""

    user_id: UserId
    lot_id: LotId
    amount: int
    reason: str | None
    expires_at: datetime | None


@attrs.frozen
class CoinsExpired(DomainEvent):
    """A lot's coins ran out of time."""

    user_id: UserId
    lot_id: LotId
    amount: int


@attrs.frozen
class ReferralRewarded(DomainEvent):
    """A first order with an invite: each side's bonus lot, told to the invitee or the inviter."""

    user_id: UserId
    lot_id: LotId
    amount: int
    invitee: bool


@attrs.frozen
class CoinsCredited(DomainEvent):
    """A purchase is paid and its coins are in the user's account."""

    user_id: UserId
    external_id: str
    coins: int
    available: int


@attrs.frozen
class PaymentConfirming(DomainEvent):
    """A payment arrived that the provider could not confirm yet: its coins follow."""

    user_id: UserId
    external_id: str
    stars: int


@attrs.frozen
class PurchaseRefunded(DomainEvent):
    user_id: UserId
    external_id: str
    coins: int
    stars: int


@attrs.frozen
class PaymentReversed(DomainEvent):
    """A payment the provider never confirmed: its coins were taken back."""

    user_id: UserId
    external_id: str
    stars: int
    coins: int


def _copy_ready(e: CopyReadyToSend) -> OutboxMessage:
    payload = {"order_id": e.order_id, "index": e.index, "copies": e.copies, "object_key": e.artifact.object_key,
               "size": e.artifact.size, "sha256": e.artifact.sha256}
    return OutboxMessage(e.user_id, "copy_ready", payload, dedup_key=f"copy:{e.order_id}:{e.index}")


def _copy_failed(e: CopyGivenUp) -> OutboxMessage:
    payload = {"order_id": e.order_id, "index": e.index, "copies": e.copies, "reason": e.reason, "tries": e.tries,
               "returned": e.returned}
    return OutboxMessage(e.user_id, "copy_failed", payload, dedup_key=f"copy-failed:{e.order_id}:{e.index}")


def _order_closed(e: OrderSettled) -> OutboxMessage:
    payload: dict[str, Any] = {
        "order_id": e.order_id, "state": e.state.value, "copies": e.copies, "charged": e.charged,
        "pending": e.pending, "released": e.released, "reason": e.reason,
    }
    if e.made is not None:
        payload["made"] = e.made
    if e.delivered is not None:
        payload["delivered"] = e.delivered
    return OutboxMessage(e.user_id, "order_closed", payload, dedup_key=f"closed:{e.order_id}")


def progress_key(order_id: str) -> str:
    """The dedup key of an order's accepted screen, the message its progress edits."""
    return f"progress:{order_id}"


def _progressed(e: OrderProgressed) -> OutboxMessage:
    """Once per tenth of a copy's render, and once per delivered copy: the edits of the
    progress message stay few whatever the worker reports."""
    payload = {"order_id": e.order_id, "copies": e.copies, "total": e.total, "delivered": e.delivered,
               "index": e.index, "percent": e.percent}
    step = f"{e.index}:{(e.percent or 0) // 10}" if e.index is not None else f"delivered:{e.delivered}"
    return OutboxMessage(e.user_id, "progress", payload, dedup_key=f"progress:{e.order_id}:{step}")


def _screen(user_id: UserId, dedup_key: str, screen: str, **values: Any) -> OutboxMessage:
    return OutboxMessage(user_id, "screen", {"screen": screen, **values}, dedup_key)


def _granted(e: CoinsGranted) -> OutboxMessage:
    expires = e.expires_at.isoformat() if e.expires_at else None
    return _screen(e.user_id, f"grant:{e.lot_id}", "coins_granted", amount=e.amount, reason=e.reason,
                   expires_at=expires)


def _expired(e: CoinsExpired) -> OutboxMessage:
    return _screen(e.user_id, f"expired:{e.lot_id}", "coins_expired", amount=e.amount)


def _referral(e: ReferralRewarded) -> OutboxMessage:
    screen = "referral_invitee_rewarded" if e.invitee else "referral_rewarded"
    return _screen(e.user_id, str(e.lot_id), screen, amount=e.amount)


def _credited(e: CoinsCredited) -> OutboxMessage:
    return _screen(e.user_id, f"paid:{e.external_id}", "coins_credited", coins=e.coins, available=e.available)


def _confirming(e: PaymentConfirming) -> OutboxMessage:
    return _screen(e.user_id, f"confirming:{e.external_id}", "payment_confirming", stars=e.stars)


def _refunded(e: PurchaseRefunded) -> OutboxMessage:
    return _screen(e.user_id, f"refund:{e.external_id}", "refunded", coins=e.coins, stars=e.stars)


def _reversed(e: PaymentReversed) -> OutboxMessage:
    return _screen(e.user_id, f"reversed:{e.external_id}", "payment_reversed", stars=e.stars, coins=e.coins)


_HANDLERS: dict[type[DomainEvent], Callable[[Any], OutboxMessage]] = {
    CopyReadyToSend: _copy_ready,
    CopyGivenUp: _copy_failed,
    OrderSettled: _order_closed,
    OrderProgressed: _progressed,
    CoinsGranted: _granted,
    CoinsExpired: _expired,
    ReferralRewarded: _referral,
    CoinsCredited: _credited,
    PaymentConfirming: _confirming,
    PurchaseRefunded: _refunded,
    PaymentReversed: _reversed,
}


def outbox_rows(events: Iterable[DomainEvent]) -> list[OutboxMessage]:
    """The outbox rows of recorded events, in the order they were recorded."""
    return [_HANDLERS[type(event)](event) for event in events]
