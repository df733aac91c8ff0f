"""The real clock and identifiers: the only places that read the time or draw randomness."""

from __future__ import annotations

import secrets
import uuid
from datetime import UTC, datetime

from videocopies.domain.shared import JobId, LotId, OrderId, OwnerToken


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)


class RandomIds:
    """Unguessable ids: an order id is shown to users and an owner token fences writes."""

    def order_id(self) -> OrderId:
        return OrderId(secrets.token_urlsafe(9))

    def job_id(self) -> JobId:
        return JobId(str(uuid.uuid4()))

    def lot_id(self) -> LotId:
        return LotId(str(uuid.uuid4()))

    def owner_token(self) -> OwnerToken:
        return OwnerToken(secrets.token_urlsafe(24))

    def seed(self) -> int:
        return secrets.randbits(63)
