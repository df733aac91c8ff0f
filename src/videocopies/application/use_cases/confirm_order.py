"""Confirm a quote: reserve the coins, create the order's job and fix every copy's effects."""

from __future__ import annotations

import attrs

from videocopies.application.errors import ServiceBusy
from videocopies.application.ports import Clock, Ids, Notifier, OutboxMessage
from videocopies.application.use_cases._common import UowFactory, load_account, load_order
from videocopies.application.use_cases.announcements import progress_key
from videocopies.application.use_cases.grants import reward_first_order
from videocopies.application.use_cases.joined import after_commit, new_or_joined
from videocopies.domain.coins import GrantRules
from videocopies.domain.effects import SeededPlans
from videocopies.domain.jobs import make_job
from videocopies.domain.pricing import PricingPolicy, QuoteKeys
from videocopies.domain.shared import OrderId, UserId


@attrs.frozen
class ConfirmOrderCommand:
    user_id: UserId
    quote_id: OrderId
    # The quote's token as the confirm button carried it. None: the caller has already
    # proved the button genuine (the bot's short MAC), so the stored quote is presented.
    token: str | None
    # What to tell the user, written in the same transaction as the confirmation.
    announce: OutboxMessage | None = None


class ConfirmOrder:
    """One transaction: the quote is checked and used, coins are reserved from the user's
    lots, a capacity slot is taken, and the job with its effects plans is queued. Only this
    user's rows are locked, and their inviter's when this first order settles a referral."""

    def __init__(
        self,
        uow: UowFactory,
        clock: Clock,
        ids: Ids,
        policy: PricingPolicy,
        keys: QuoteKeys,
        notifier: Notifier,
        max_attempts: int = 3,
        grants: GrantRules | None = None,  # None: referrals are not settled here
    ) -> None:
        self._uow, self._clock, self._ids = uow, clock, ids
        self._policy, self._keys, self._notifier = policy, keys, notifier
        self._max_attempts, self._grants = max_attempts, grants

    async def __call__(self, cmd: ConfirmOrderCommand) -> OrderId:
        now = self._clock.now()
        async with new_or_joined(self._uow) as uow:
            referrals = [cmd.user_id] if self._grants is not None else []
            await uow.prefetch(orders=[cmd.quote_id], accounts=[cmd.user_id], referrals=referrals)
            order = await load_order(uow, cmd.quote_id, cmd.user_id)
            presented = order.quote if cmd.token is None else attrs.evolve(order.quote, token=cmd.token)
            order.confirm(presented, self._keys, now, self._policy, cmd.user_id)
            account = await load_account(uow, cmd.user_id, create=True)
            account.reserve(order.order_id, order.total, now)
            if not await uow.capacity.take(order.order_id):
                raise ServiceBusy(order.order_id)
            plans = SeededPlans(order.seed, order.quote.copies)  # drawn when a claim hands them out
            job = make_job(
                self._ids.job_id(), order.order_id, plans, now, self._max_attempts, order.quote.source_bytes
            )
            await uow.jobs.add(job)
            if self._grants is not None:
                await reward_first_order(uow, cmd.user_id, self._grants, now)
            if cmd.announce is not None:  # the message the order's progress is shown in, once
                await uow.outbox.add(attrs.evolve(cmd.announce, dedup_key=progress_key(order.order_id)))
            await uow.commit()
        after_commit(self._notifier.job_available)
        return order.order_id
