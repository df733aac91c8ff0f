"""What the user is told when a job's work changes their order, in one place: use cases record
these events on their unit of work (`uow.record`), and the unit of work turns each into its
outbox row at commit, with the handler registered for its type below. The row is written in
the transaction of the change it announces, and its dedup key makes it once per change."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import attrs

from videocopies.application.ports import OutboxMessage
from videocopies.domain.jobs import CopyArtifact
from videocopies.domain.orders import CopyState, Order, OrderState
from videocopies.domain.shared import DomainEvent, OrderId, UserId


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

    @classmethod
    def of(cls, order: Order, released: int) -> OrderSettled:
        done = order.state is OrderState.DONE
        return cls(
            order.user_id, order.order_id, order.state, len(order.copies), order.charged,
            order.price_per_copy * order.count(CopyState.RENDERED), released, order.failure_reason,
            order.count(CopyState.RENDERED) + order.count(CopyState.DELIVERED) if done else None,
        )


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
    return OutboxMessage(e.user_id, "order_closed", payload, dedup_key=f"closed:{e.order_id}")


_HANDLERS: dict[type[DomainEvent], Callable[[Any], OutboxMessage]] = {
    CopyReadyToSend: _copy_ready,
    CopyGivenUp: _copy_failed,
    OrderSettled: _order_closed,
}


def outbox_rows(events: Iterable[DomainEvent]) -> list[OutboxMessage]:
    """The outbox rows of recorded events, in the order they were recorded."""
    return [_HANDLERS[type(event)](event) for event in events]
