"""Refusals of the coin ledger."""

from __future__ import annotations

import attrs

from videocopies.domain.shared import DomainError, LotId, OrderId, UserId


@attrs.define
class InsufficientCoins(DomainError):
    account_id: UserId
    needed: int
    available: int

    @property
    def short_by(self) -> int:
        return self.needed - self.available


@attrs.define
class ReservationExists(DomainError):
    order_id: OrderId


@attrs.define
class ReservationNotFound(DomainError):
    order_id: OrderId


@attrs.define
class ReservationClosed(DomainError):
    order_id: OrderId


@attrs.define
class DebitExceedsReservation(DomainError):
    order_id: OrderId
    requested: int
    held: int


@attrs.define
class InvalidAmount(DomainError):
    amount: int


@attrs.define
class LotExists(DomainError):
    lot_id: LotId


@attrs.define
class LotNotFound(DomainError):
    lot_id: LotId


@attrs.define
class LotNotRefundable(DomainError):
    """Only a lot none of whose coins were spent, set aside or expired can be given back."""

    lot_id: LotId
    amount: int
    available: int
