"""Payments: each external transaction credits coins exactly once."""

from __future__ import annotations

from datetime import datetime

import attrs

from videocopies.domain.coins import CoinAccount, CoinLot, LotKind
from videocopies.domain.shared import DomainError, LotId, UserId


@attrs.define
class PaymentMismatch(DomainError):
    """The same external id arrived with other terms than the payment we recorded."""

    external_id: str
    field: str


@attrs.define
class PaymentForAnotherAccount(DomainError):
    external_id: str
    account_id: UserId


@attrs.frozen
class Payment:
    """A settled external transaction (e.g. a Telegram Stars charge) and the coins it bought."""

    external_id: str
    user_id: UserId
    coins: int
    paid_amount: int
    currency: str
    received_at: datetime

    @property
    def lot_id(self) -> LotId:
        # Derived from the external id, so a duplicate can never grant a second lot.
        return LotId(f"pay:{self.external_id}")

    def credit(self, account: CoinAccount, now: datetime, expires_at: datetime | None) -> CoinLot:
        if account.account_id != self.user_id:
            raise PaymentForAnotherAccount(self.external_id, account.account_id)
        return account.grant(self.lot_id, LotKind.PURCHASE, self.coins, now, expires_at)

    def same_terms(self, other: Payment) -> None:
        """A repeated notification must describe the same payment."""
        for field in ("user_id", "coins", "paid_amount", "currency"):
            if getattr(self, field) != getattr(other, field):
                raise PaymentMismatch(self.external_id, field)


@attrs.frozen
class ProviderTransaction:
    """One line of the provider's own transaction list: a payment to us, or (`refund`) the
    same charge paid back to the user."""

    external_id: str
    user_id: UserId
    paid_amount: int
    currency: str
    payload: str | None = None  # the invoice payload: the offer that was paid for
    refund: bool = False
