"""What happened to an account's coins."""

from __future__ import annotations

import attrs

from videocopies.domain.shared import DomainEvent, LotId, OrderId, UserId


@attrs.frozen
class CoinsGranted(DomainEvent):
    account_id: UserId
    lot_id: LotId
    amount: int


@attrs.frozen
class CoinsReserved(DomainEvent):
    account_id: UserId
    order_id: OrderId
    amount: int


@attrs.frozen
class CoinsDebited(DomainEvent):
    account_id: UserId
    order_id: OrderId
    amount: int
    key: str


@attrs.frozen
class CoinsReleased(DomainEvent):
    account_id: UserId
    order_id: OrderId
    returned: int
    expired: int


@attrs.frozen
class CoinsExpired(DomainEvent):
    account_id: UserId
    lot_id: LotId
    amount: int


@attrs.frozen
class CoinsRefunded(DomainEvent):
    account_id: UserId
    lot_id: LotId
    amount: int
