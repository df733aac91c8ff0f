"""A payment as a node reported it: a claim, worth nothing until the provider lists the charge."""

from __future__ import annotations

from datetime import datetime

import attrs

from videocopies.domain.payments.payment import ProviderTransaction
from videocopies.domain.shared import UserId


@attrs.frozen
class PaymentClaim:
    """Edge said a user paid (Telegram's successful_payment). An edge token can say that of any
    user and any charge id, so where the provider can be asked, only its own record of the
    charge credits coins, on its terms; a claim it never confirms stays unconfirmed."""

    external_id: str
    user_id: UserId
    paid_amount: int
    currency: str
    invoice_payload: str | None
    node: str | None  # the edge node that reported it, when known
    claimed_at: datetime

    def matches(self, tx: ProviderTransaction) -> bool:
        """The provider's charge is the one claimed: same user, amount and currency."""
        return not tx.refund and (tx.external_id, tx.user_id, tx.paid_amount, tx.currency) == (
            self.external_id, self.user_id, self.paid_amount, self.currency
        )
