"""Receipts: idempotent reports keyed by a client-chosen id."""

from videocopies.domain.receipts.receipt import Receipt, ReceiptConflict, fingerprint

__all__ = ["Receipt", "ReceiptConflict", "fingerprint"]
