"""Time and identifiers come in from outside, never from the domain."""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from videocopies.domain.shared import JobId, LotId, OrderId, OwnerToken


class Clock(Protocol):
    def now(self) -> datetime: ...


class Ids(Protocol):
    """Identifiers, owner tokens and seeds come from here, never from the domain."""

    def order_id(self) -> OrderId: ...
    def job_id(self) -> JobId: ...
    def lot_id(self) -> LotId: ...
    def owner_token(self) -> OwnerToken: ...
    def seed(self) -> int: ...
