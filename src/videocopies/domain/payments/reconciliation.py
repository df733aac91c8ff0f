"""Reconciliation: our payments and refunds against the provider's own transaction list."""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from videocopies.domain.payments.payment import Payment, ProviderTransaction
from videocopies.domain.payments.refund import Refund, RefundState


@attrs.frozen
class ReconciliationReport:
    """Missing: the provider has it, we do not (credit it). Unknown: we have it, the
    provider does not (investigate). Mismatched: both have it with different terms.
    Refunds: confirmed are ours the provider has made (finish them), unsent are ours it has
    not (ask again), elsewhere are the provider's we never asked for (investigate)."""

    missing: tuple[ProviderTransaction, ...]
    unknown: tuple[Payment, ...]
    mismatched: tuple[tuple[ProviderTransaction, Payment], ...]
    refunds_confirmed: tuple[str, ...] = ()
    refunds_unsent: tuple[str, ...] = ()
    refunded_elsewhere: tuple[ProviderTransaction, ...] = ()

    @property
    def clean(self) -> bool:
        return not (
            self.missing or self.unknown or self.mismatched or self.refunds_confirmed or self.refunds_unsent
            or self.refunded_elsewhere
        )


def reconcile(
    provider: Iterable[ProviderTransaction], ours: Iterable[Payment], refunds: Iterable[Refund] = ()
) -> ReconciliationReport:
    charges: dict[str, ProviderTransaction] = {}
    paid_back: dict[str, ProviderTransaction] = {}
    for tx in provider:
        (paid_back if tx.refund else charges).setdefault(tx.external_id, tx)
    by_id = {p.external_id: p for p in ours}
    our_refunds = {r.external_id: r for r in refunds}
    missing: list[ProviderTransaction] = []
    mismatched: list[tuple[ProviderTransaction, Payment]] = []
    for external_id, tx in charges.items():
        payment = by_id.get(external_id)
        if payment is None:
            if external_id not in paid_back:  # refunded before we ever credited it: nothing to give
                missing.append(tx)
        elif (tx.user_id, tx.paid_amount, tx.currency) != (payment.user_id, payment.paid_amount, payment.currency):
            mismatched.append((tx, payment))
    unknown = tuple(p for eid, p in by_id.items() if eid not in charges)
    pending = {eid for eid, r in our_refunds.items() if r.state is RefundState.PENDING}
    asked = {eid for eid, r in our_refunds.items() if r.state is not RefundState.REFUSED}
    return ReconciliationReport(
        tuple(missing),
        unknown,
        tuple(mismatched),
        refunds_confirmed=tuple(eid for eid in paid_back if eid in pending),
        refunds_unsent=tuple(sorted(eid for eid in pending if eid not in paid_back)),
        refunded_elsewhere=tuple(tx for eid, tx in paid_back.items() if eid not in asked),
    )
