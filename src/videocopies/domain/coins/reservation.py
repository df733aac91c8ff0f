"""A reservation: the coins an order holds, remembered per lot."""

from __future__ import annotations

import attrs

from videocopies.domain.shared import LotId, OrderId


@attrs.define(slots=False, eq=False)
class Hold:
    """Coins of one lot held for one order."""

    lot_id: LotId
    held: int


@attrs.define(slots=False, eq=False)
class Reservation:
    """An order's claim on coins. Holds stay in the order they were taken
    (soonest expiry first), so debits consume the soonest-expiring coins."""

    order_id: OrderId
    amount: int
    holds: list[Hold] = attrs.Factory(list)
    debited: int = 0
    released: int = 0
    debit_keys: set[str] = attrs.Factory(set)
    open: bool = True

    @property
    def held(self) -> int:
        return sum(h.held for h in self.holds)
