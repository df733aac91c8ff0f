"""Payments: coin packages, crediting purchases once per external id, refunds, reconciliation."""

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

__all__ = [
    "DEFAULT_PACKAGES", "STARS", "AlreadyRefunded", "CoinPackage", "OfferWithdrawn", "PackageCatalog", "Payment",
    "PaymentForAnotherAccount", "PaymentMismatch", "ProviderTransaction", "ReconciliationReport", "Refund",
    "RefundState", "parse_offer", "reconcile",
]
