"""Payments: crediting purchases once per external id, and reconciliation."""

from videocopies.domain.payments.payment import (
    Payment,
    PaymentForAnotherAccount,
    PaymentMismatch,
    ProviderTransaction,
    ReconciliationReport,
    reconcile,
)

__all__ = [
    "Payment", "PaymentForAnotherAccount", "PaymentMismatch", "ProviderTransaction",
    "ReconciliationReport", "reconcile",
]
