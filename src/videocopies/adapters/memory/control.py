"""A control read model that answers with what a test put in it."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import attrs

from videocopies.application.control import (
    DutyView,
    LeaseView,
    Ledger,
    MinuteCount,
    MinuteLatency,
    NodeView,
    OrderView,
    PaymentView,
    QueueDepth,
    ReconciliationView,
    ReversedPaymentView,
    UnconfirmedPaymentView,
    UnreadableView,
)


@attrs.define
class InMemoryControlReadModel:
    depth: QueueDepth = QueueDepth(0, 0, 0, 0, 0.0, 0, 0.0, 0)
    node_views: list[NodeView] = attrs.Factory(list)
    duty_views: list[DutyView] = attrs.Factory(list)
    lease_views: list[LeaseView] = attrs.Factory(list)
    order_views: list[OrderView] = attrs.Factory(list)
    ledgers: dict[int, Ledger] = attrs.Factory(dict)
    payment_views: list[PaymentView] = attrs.Factory(list)
    reconciliation_views: list[ReconciliationView] | None = None
    unconfirmed_views: list[UnconfirmedPaymentView] = attrs.Factory(list)
    reversed_views: list[ReversedPaymentView] = attrs.Factory(list)
    copies: list[MinuteCount] = attrs.Factory(list)
    latency: list[MinuteLatency] = attrs.Factory(list)
    unreadable_views: list[UnreadableView] = attrs.Factory(list)

    async def nodes(self) -> Sequence[NodeView]:
        return self.node_views

    async def duties(self) -> Sequence[DutyView]:
        return self.duty_views

    async def queue_depth(self) -> QueueDepth:
        return self.depth

    async def leases(self, limit: int) -> Sequence[LeaseView]:
        return self.lease_views[:limit]

    async def orders_in_progress(self, limit: int) -> Sequence[OrderView]:
        return [o for o in self.order_views if o.state in ("confirmed", "running", "cancelling")][:limit]

    async def recent_orders(self, limit: int) -> Sequence[OrderView]:
        return sorted(self.order_views, key=lambda o: o.created_at, reverse=True)[:limit]

    async def user_orders(self, user_id: int, limit: int) -> Sequence[OrderView]:
        return [o for o in await self.recent_orders(len(self.order_views)) if o.user_id == user_id][:limit]

    async def ledger(self, user_id: int) -> Ledger | None:
        return self.ledgers.get(user_id)

    async def payments(self, limit: int, user_id: int | None = None) -> Sequence[PaymentView]:
        chosen = [p for p in self.payment_views if user_id is None or p.user_id == user_id]
        return sorted(chosen, key=lambda p: p.received_at, reverse=True)[:limit]

    async def unconfirmed_payments(self, limit: int) -> Sequence[UnconfirmedPaymentView]:
        return sorted(self.unconfirmed_views, key=lambda c: c.claimed_at, reverse=True)[:limit]

    async def reversed_payments(self, limit: int) -> Sequence[ReversedPaymentView]:
        return sorted(self.reversed_views, key=lambda r: r.reversed_at, reverse=True)[:limit]

    async def reconciliations(self, limit: int) -> Sequence[ReconciliationView] | None:
        return None if self.reconciliation_views is None else self.reconciliation_views[:limit]

    async def copies_per_minute(self, since: datetime) -> Sequence[MinuteCount]:
        return [row for row in self.copies if row.minute >= since]

    async def latency_per_minute(self, since: datetime) -> Sequence[MinuteLatency]:
        return [row for row in self.latency if row.minute >= since]

    async def unreadable(self, limit: int) -> Sequence[UnreadableView]:
        return sorted(self.unreadable_views, key=lambda u: u.at, reverse=True)[:limit]
