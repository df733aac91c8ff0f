"""Referral bonuses: the invited user and the one who invited them each get coins, once,
when the invited user confirms a first order, and an inviter only up to the caps."""

from __future__ import annotations

from datetime import datetime, timedelta

from videocopies.application.ports import Clock, GrantRecord, UnitOfWork
from videocopies.application.use_cases._common import UowFactory, load_account
from videocopies.application.use_cases.announcements import ReferralRewarded
from videocopies.application.use_cases.joined import new_or_joined
from videocopies.domain.coins import GrantRules, LotKind, Referral, ReferralOutcome
from videocopies.domain.shared import UserId

_DAY = timedelta(days=1)

MAX_CHAIN = 100  # how far up the invitation chain a loop is looked for


class RewardReferral:
    """A new user who came through another user's invite link: the referral is recorded, and
    nothing is given yet (a fake account would cost nothing); the invited user's first
    confirmed order settles it (`reward_first_order`). Nobody invites themselves, a user is
    invited once, and no chain of invitations may lead back to the invited user."""

    def __init__(self, uow: UowFactory, clock: Clock, rules: GrantRules) -> None:
        self._uow, self._clock, self._rules = uow, clock, rules

    @property
    def bonus(self) -> int:
        return self._rules.referral_bonus

    async def __call__(self, invitee: UserId, inviter: UserId) -> Referral:
        now = self._clock.now()
        async with new_or_joined(self._uow) as uow:
            # Both accounts locked in id order, so two referrals never wait on each other.
            await uow.prefetch(accounts=sorted({invitee, inviter}))
            chain: list[UserId] = []
            above = await uow.referrals.inviter_of(inviter) if invitee != inviter else None
            while above is not None and above not in chain and len(chain) < MAX_CHAIN:
                chain.append(above)
                above = await uow.referrals.inviter_of(above)
            inviter_account = await uow.accounts.get(inviter)
            referral = Referral.admit(
                invitee, inviter, now, inviter_known=inviter_account is not None,
                invited_before_by=await uow.referrals.inviter_of(invitee), inviter_chain=chain,
            )
            await load_account(uow, invitee, create=True)  # the referral names both accounts
            await uow.referrals.add(referral)
            await uow.commit()
        return referral


async def reward_first_order(uow: UnitOfWork, invitee: UserId, rules: GrantRules, now: datetime) -> None:
    """Inside the transaction that confirms `invitee`'s order (their account already locked):
    a referral still waiting for this first order is settled. Both sides get the bonus unless
    the inviter is at a cap; the inviter's account is locked before counting, so two invitees
    ordering at once never both slip under a cap. Locks go invitee, then inviter: up the
    invitation tree, which has no loops."""
    referral = await uow.referrals.unsettled(invitee)
    if referral is None:
        return
    await uow.prefetch(accounts=[referral.inviter], lots=[referral.inviter_lot])
    rewarded = await uow.referrals.rewarded(referral.inviter, now - _DAY)
    settled = referral.settle(rewarded, rules.referral_caps, now)
    invitee_account = await load_account(uow, invitee, create=True, lots=[referral.invitee_lot])
    inviter_account = await load_account(uow, referral.inviter, lots=[referral.inviter_lot])
    already = any(lot.lot_id == referral.invitee_lot for lot in invitee_account.lots)  # rewarded at arrival
    amount, expires_at = rules.referral_bonus, rules.expires_at(LotKind.REFERRAL, now)
    if settled.outcome is ReferralOutcome.REWARDED and amount > 0 and not already:
        for account, lot_id, why, is_invitee in (
            (invitee_account, referral.invitee_lot, f"invited by {referral.inviter}", True),
            (inviter_account, referral.inviter_lot, f"invited {invitee}", False),
        ):
            account.grant(lot_id, LotKind.REFERRAL, amount, now, expires_at)
            record = GrantRecord(lot_id, account.account_id, LotKind.REFERRAL, amount, "referral", why, now)
            await uow.grants.add(record)
            await uow.record(ReferralRewarded(account.account_id, lot_id, amount, is_invitee))
    await uow.referrals.settle(settled)
