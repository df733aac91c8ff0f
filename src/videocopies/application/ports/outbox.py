"""The outbox as edge's sender sees it, and the users it cannot reach."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol

import attrs

from videocopies.application.ports.unit_of_work import OutboxMessage
from videocopies.domain.shared import OrderId, UserId


@attrs.frozen
class QueuedMessage:
    """An outbox row as a sender sees it."""

    message_id: int
    user_id: int
    kind: str
    payload: dict[str, Any]
    attempts: int = 0  # claims so far, this one included
    blocked: bool = False  # its user cannot be reached: give it up, do not send it


class OutboxQueue(Protocol):
    async def unsent_of(self, user_id: int) -> Sequence[QueuedMessage]:
        """Every message of this user not yet sent (or given up), oldest first."""
        ...
    async def give_up(self, deliveries: Sequence[tuple[int, dict[str, Any]]]) -> int:
        """Close these messages with what happened; returns how many were still open."""
        ...
    async def queue(self, messages: Sequence[OutboxMessage]) -> None:
        """Write messages (a dedup key seen before is skipped), in this order."""
        ...


class UnreachableUsers(Protocol):
    async def open_orders(self, user_id: UserId) -> Sequence[OrderId]:
        """The user's orders that may still render or deliver."""
        ...
    async def block(self, user_id: UserId, now: datetime) -> None:
        """Remember that Telegram will not deliver to this user (until they write again)."""
        ...
