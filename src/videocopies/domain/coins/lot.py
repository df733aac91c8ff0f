"""A coin lot: one grant of coins with its own kind and expiry."""

from __future__ import annotations

import enum
from datetime import datetime

import attrs

from videocopies.domain.shared import LotId


class LotKind(enum.Enum):
    START = "start"
    REFERRAL = "referral"
    MANUAL = "manual"
    PURCHASE = "purchase"


@attrs.define(slots=False, eq=False)
class CoinLot:
    """Coins granted at once. Every coin of a lot is in exactly one place:
    available, held by reservations, debited, expired, or refunded (a purchase given back)."""

    lot_id: LotId
    kind: LotKind
    amount: int
    granted_at: datetime
    expires_at: datetime | None
    available: int
    debited: int = 0
    expired: int = 0
    refunded: int = 0

    @classmethod
    def grant(
        cls,
        lot_id: LotId,
        kind: LotKind,
        amount: int,
        granted_at: datetime,
        expires_at: datetime | None,
    ) -> CoinLot:
        return cls(lot_id, kind, amount, granted_at, expires_at, available=amount)

    def is_expired(self, now: datetime) -> bool:
        return self.expires_at is not None and self.expires_at <= now

    def usable(self, now: datetime) -> bool:
        return not self.is_expired(now) and self.available > 0

    def untouched(self, now: datetime) -> bool:
        """Every coin still available and usable: nothing spent, set aside or expired."""
        return self.available == self.amount and not self.is_expired(now)

    def spend_order(self) -> tuple[bool, datetime, datetime, str]:
        """Soonest expiry first; lots that never expire last; then oldest grant."""
        never = self.expires_at is None
        return (never, self.expires_at or self.granted_at, self.granted_at, self.lot_id)
