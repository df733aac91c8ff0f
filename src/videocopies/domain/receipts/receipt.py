"""Receipts: a report that must not run twice is answered from its stored result."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

import attrs

from videocopies.domain.shared import DomainError


@attrs.define
class ReceiptConflict(DomainError):
    """The same receipt id was presented with a different request."""

    receipt_id: str
    stored_fingerprint: str
    presented_fingerprint: str


def fingerprint(request: Mapping[str, Any]) -> str:
    """A stable digest of a request's content: key order and whitespace do not matter."""
    canonical = json.dumps(request, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


@attrs.frozen
class Receipt:
    """A client-chosen id bound to the request it first came with and the result given."""

    receipt_id: str
    fingerprint: str
    result: Mapping[str, Any]

    @classmethod
    def record(cls, receipt_id: str, request: Mapping[str, Any], result: Mapping[str, Any]) -> Receipt:
        return cls(receipt_id, fingerprint(request), dict(result))

    def replay(self, request: Mapping[str, Any]) -> Mapping[str, Any]:
        """The stored result for a retry of the same request; a different request is a conflict."""
        presented = fingerprint(request)
        if presented != self.fingerprint:
            raise ReceiptConflict(self.receipt_id, self.fingerprint, presented)
        return self.result
