"""Offer the user a price for making copies of a stored video."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import attrs

from videocopies.application.ports import Clock, Ids, OutboxMessage
from videocopies.application.use_cases._common import UowFactory
from videocopies.application.use_cases.joined import new_or_joined
from videocopies.domain.orders import Order
from videocopies.domain.pricing import PricingPolicy, Quote, QuoteKeys
from videocopies.domain.shared import UserId


@attrs.frozen
class QuoteOrderCommand:
    user_id: UserId
    source_key: str
    copies: int
    source_bytes: int = 0
    # What to tell the user about the quote, written in the transaction that stores it.
    announce: Callable[[Quote], OutboxMessage] | None = None


class QuoteOrder:
    """Price the order on the current tariff and store it as a quoted order; the quote's
    token is what the confirm button carries."""

    def __init__(
        self,
        uow: UowFactory,
        clock: Clock,
        ids: Ids,
        policy: PricingPolicy,
        keys: QuoteKeys,
        ttl: timedelta,
    ) -> None:
        self._uow, self._clock, self._ids = uow, clock, ids
        self._policy, self._keys, self._ttl = policy, keys, ttl

    async def __call__(self, cmd: QuoteOrderCommand) -> Quote:
        now = self._clock.now()
        quote = Quote.issue(
            self._ids.order_id(), cmd.user_id, cmd.source_key, cmd.copies,
            self._policy.current, now, self._ttl, self._keys, cmd.source_bytes,
        )
        async with new_or_joined(self._uow) as uow:
            await uow.orders.add(Order.from_quote(quote, self._ids.seed(), now))
            if cmd.announce is not None:
                await uow.outbox.add(cmd.announce(quote))
            await uow.commit()
        return quote
