"""Orders: loaded (locked by the opening read when prefetched), written back at commit when their
version moved."""

from __future__ import annotations

from typing import Any

from videocopies.adapters.postgres import mappers
from videocopies.adapters.postgres.unit_of_work.write_set import Transaction, Writes
from videocopies.domain.orders import Order
from videocopies.domain.shared import OrderId


class PostgresOrders:
    def __init__(self, uow: Transaction) -> None:
        self._uow = uow
        self.loaded: dict[OrderId, tuple[Order, int]] = {}
        self.added: dict[OrderId, Order] = {}

    async def get(self, order_id: OrderId) -> Order | None:
        if order_id in self.added:
            return self.added[order_id]
        if order_id in self.loaded:
            return self.loaded[order_id][0]
        row = await self._uow.fetchone("load_order", {"order_id": order_id})
        return None if row is None else self.remember(row)

    def known(self, order_id: OrderId) -> Order | None:
        if order_id in self.added:
            return self.added[order_id]
        return self.loaded[order_id][0] if order_id in self.loaded else None

    def remember(self, row: dict[str, Any]) -> Order:
        order = mappers.order_from_row(row)
        self.loaded[order.order_id] = (order, order.version)
        return order

    async def add(self, order: Order) -> None:
        self.added[order.order_id] = order

    def writes(self) -> Writes:
        out: Writes = [("insert_order", mappers.order_params(o)) for o in self.added.values()]
        for order, loaded in self.loaded.values():
            if order.version != loaded:
                out.append(("update_order", mappers.order_change_params(order, loaded)))
        return out
