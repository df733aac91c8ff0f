"""A payment provider's transaction list held in memory."""

from __future__ import annotations

from collections.abc import AsyncIterator

from videocopies.domain.payments import ProviderTransaction


class InMemoryPaymentProvider:
    def __init__(self, transactions: list[ProviderTransaction] | None = None) -> None:
        self.settled: list[ProviderTransaction] = list(transactions or [])

    async def transactions(self) -> AsyncIterator[ProviderTransaction]:
        for tx in list(self.settled):
            yield tx
