"""Payments: coin packages, crediting purchases once per external id, refunds, reconciliation."""

from videocopies.domain.payments.claim import PaymentClaim
from videocopies.domain.payments.packages import (
    DEFAULT_PACKAGES,
    STARS,
    CoinPackage,
    OfferWithdrawn,
    PackageCatalog,
    parse_offer,
)
from videocopies.domain.payments.payment import (
    Payment,
    PaymentForAnotherAccount,
    PaymentMismatch,
    ProviderTransaction,
)
from videocopies.domain.payments.reconciliation import ReconciliationReport, reconcile
from videocopies.domain.payments.refund import AlreadyRefunded, Refund, RefundState
from videocopies.domain.payments.reversal import Reversal, looks_foreign, to_reverse

__all__ = [
    "AlreadyRefunded", "CoinPackage", "DEFAULT_PACKAGES", "OfferWithdrawn", "PackageCatalog", "Payment",
    "PaymentClaim", "PaymentForAnotherAccount", "PaymentMismatch", "ProviderTransaction", "ReconciliationReport",
    "Refund", "RefundState", "Reversal", "STARS", "parse_offer", "reconcile", "to_reverse",
    "looks_foreign",
]
