"""Refunds: an operator gives a purchase back while none of its coins was used."""

from __future__ import annotations

import enum
from datetime import datetime

import attrs

from videocopies.domain.coins import CoinAccount
from videocopies.domain.payments.payment import Payment
from videocopies.domain.shared import DomainError, UserId


class RefundState(enum.Enum):
    PENDING = "pending"  # coins taken back; the provider has not confirmed yet
    DONE = "done"
    REFUSED = "refused"  # the provider said no: the coins came back


@attrs.define
class AlreadyRefunded(DomainError):
    external_id: str


@attrs.define(slots=False, eq=False)
class Refund:
    """The coins leave the account first (state pending), then the provider is asked; a
    crash in between leaves a pending refund that is finished later, never lost coins
    or Stars returned for coins still spendable."""

    external_id: str
    user_id: UserId
    coins: int
    requested_by: str
    reason: str
    requested_at: datetime
    state: RefundState = RefundState.PENDING
    finished_at: datetime | None = None
    provider_answer: str | None = None

    @classmethod
    def request(
        cls,
        payment: Payment,
        account: CoinAccount,
        by: str,
        reason: str,
        now: datetime,
        earlier: Refund | None = None,
    ) -> Refund:
        if earlier is not None and earlier.state is not RefundState.REFUSED:
            raise AlreadyRefunded(payment.external_id)
        coins = account.refund(payment.lot_id, now)
        return cls(payment.external_id, payment.user_id, coins, by, reason, now)

    def complete(self, now: datetime, answer: str = "refunded") -> bool:
        if self.state is not RefundState.PENDING:
            return False
        self.state, self.finished_at, self.provider_answer = RefundState.DONE, now, answer
        return True

    def refuse(self, payment: Payment, account: CoinAccount, answer: str, now: datetime) -> None:
        """The provider will not refund: the coins are the user's again."""
        if self.state is not RefundState.PENDING:
            return
        account.undo_refund(payment.lot_id, now)
        self.state, self.finished_at, self.provider_answer = RefundState.REFUSED, now, answer
