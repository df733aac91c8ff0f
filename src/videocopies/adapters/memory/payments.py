"""A payment provider held in memory: its transaction list, and refunds with the
provider's own refusals."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence

from videocopies.application.errors import ProviderUnavailable, RefundRefused
from videocopies.domain.payments import ProviderTransaction
from videocopies.domain.shared import UserId


class InMemoryPaymentProvider:
    def __init__(self, transactions: list[ProviderTransaction] | None = None) -> None:
        self.settled: list[ProviderTransaction] = list(transactions or [])
        self.unreachable = False  # refunds fail as a network error would, for tests
        self.answers_lost = False  # refunds are made, but the answer never comes back
        self.reads = 0  # lists read (`since`), for tests
        self.answer_after_s = 0.0  # how long each read of the list takes, for tests

    async def transactions(self) -> AsyncIterator[ProviderTransaction]:
        for tx in list(self.settled):
            yield tx

    async def since(self, position: int) -> tuple[Sequence[ProviderTransaction], int]:
        self.reads += 1
        await asyncio.sleep(self.answer_after_s)  # an answer comes back later, as over the network
        if self.unreachable:
            raise ProviderUnavailable("the provider did not answer")
        return list(self.settled[position:]), len(self.settled)

    async def refund(self, user_id: UserId, external_id: str) -> None:
        if self.unreachable:
            raise ProviderUnavailable("the provider did not answer")
        charge = next((tx for tx in self.settled if tx.external_id == external_id and not tx.refund), None)
        if charge is None:
            raise RefundRefused(external_id, "CHARGE_ID_INVALID")
        if charge.user_id != user_id:
            raise RefundRefused(external_id, "USER_ID_INVALID")
        if any(tx.refund and tx.external_id == external_id for tx in self.settled):
            return  # already refunded: done, as Telegram's CHARGE_ALREADY_REFUNDED means
        self.settled.append(
            ProviderTransaction(external_id, user_id, charge.paid_amount, charge.currency, charge.payload, refund=True)
        )
        if self.answers_lost:
            raise ProviderUnavailable("the refund was made, but its answer was lost")
