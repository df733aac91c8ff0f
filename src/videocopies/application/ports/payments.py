"""The payment provider, as reconciliation and refunds reach it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Protocol

from videocopies.domain.payments import ProviderTransaction
from videocopies.domain.shared import UserId


class PaymentProvider(Protocol):
    """The payment provider: its own list of settled transactions, and refunds."""

    def transactions(self) -> AsyncIterator[ProviderTransaction]: ...
    async def since(self, position: int) -> tuple[Sequence[ProviderTransaction], int]:
        """The transactions after the first `position` of the provider's chronological list,
        and the position after them. Raises ProviderNotConfigured when there is no provider."""
        ...
    async def refund(self, user_id: UserId, external_id: str) -> None:
        """Pay a charge back to its user; a charge already refunded counts as done. Raises
        RefundRefused when the provider will never do it, ProviderUnavailable when unsure."""
        ...
