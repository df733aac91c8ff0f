"""Payments: each external transaction credits coins exactly once."""

from __future__ import annotations

from collections.abc import Iterable
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
    """One line of the provider's own transaction list."""

    external_id: str
    user_id: UserId
    paid_amount: int
    currency: str


@attrs.frozen
class ReconciliationReport:
    """Missing: the provider has it, we do not (credit it). Unknown: we have it, the
    provider does not (investigate). Mismatched: both have it with different terms."""

    missing: tuple[ProviderTransaction, ...]
    unknown: tuple[Payment, ...]
    mismatched: tuple[tuple[ProviderTransaction, Payment], ...]

    @property
    def clean(self) -> bool:
        return not (self.missing or self.unknown or self.mismatched)


def reconcile(
    provider: Iterable[ProviderTransaction], ours: Iterable[Payment]
) -> ReconciliationReport:
    by_id = {p.external_id: p for p in ours}
    seen: set[str] = set()
    missing: list[ProviderTransaction] = []
    mismatched: list[tuple[ProviderTransaction, Payment]] = []
    for tx in provider:
        if tx.external_id in seen:
            continue
        seen.add(tx.external_id)
        payment = by_id.get(tx.external_id)
        if payment is None:
            missing.append(tx)
        elif (tx.user_id, tx.paid_amount, tx.currency) != (
            payment.user_id, payment.paid_amount, payment.currency,
        ):
            mismatched.append((tx, payment))
    unknown = tuple(p for eid, p in by_id.items() if eid not in seen)
    return ReconciliationReport(tuple(missing), unknown, tuple(mismatched))
