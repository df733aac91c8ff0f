"""Reversals: a credited payment the provider does not know is taken back, as its own record."""

from __future__ import annotations

from collections.abc import Collection, Iterable
from datetime import datetime

import attrs

from videocopies.domain.coins import CoinAccount
from videocopies.domain.payments.payment import Payment
from videocopies.domain.shared import UserId


@attrs.frozen
class Reversal:
    """The coins of a payment the provider never made, taken back. `taken`: coins still in the
    account; `owed`: coins already spent or held by orders (shown to the operator, not
    recovered). The payment row stays; this records what happened to it."""

    external_id: str
    user_id: UserId
    taken: int
    owed: int
    reason: str
    reversed_at: datetime

    @classmethod
    def of(cls, payment: Payment, account: CoinAccount, reason: str, now: datetime) -> Reversal:
        taken = account.take_back(payment.lot_id, now)
        return cls(payment.external_id, payment.user_id, taken, payment.coins - taken, reason, now)


def to_reverse(
    unknown: Iterable[Payment], reversed_before: Collection[str], refunded: Collection[str], listed_at: datetime
) -> list[Payment]:
    """Of the payments the provider's list lacks, those to reverse: received before the list
    was read (a later one may not be listed yet), not reversed already, and not refunded."""
    return [
        p for p in unknown
        if p.received_at < listed_at and p.external_id not in reversed_before and p.external_id not in refunded
    ]


# Reconciliation run with another bot's token reads that bot's list, which has none of ours:
# every payment of ours would look unknown (and be reversed), and its charges would look
# missed (and be credited to whoever has the same user id here). A forged notice leaves a few
# unknown payments; this many of ours with not one listed says the list is the wrong one.
FOREIGN_AT = 3


def looks_foreign(ours: int, ours_listed: int) -> bool:
    """Whether a provider's list holding `ours_listed` of our `ours` payments is another bot's."""
    return ours >= FOREIGN_AT and ours_listed == 0
