"""Referral bonuses: the invited user and the one who invited them each get coins, once."""

from __future__ import annotations

from videocopies.application.ports import Clock, GrantRecord, OutboxMessage
from videocopies.application.use_cases._common import UowFactory, load_account
from videocopies.domain.coins import GrantRules, LotKind, Referral
from videocopies.domain.shared import UserId

MAX_CHAIN = 100  # how far up the invitation chain a loop is looked for


class RewardReferral:
    """A new user who came through another user's invite link: both get the referral bonus
    in one transaction. Nobody invites themselves, a user is invited once, and no chain of
    invitations may lead back to the invited user."""

    def __init__(self, uow: UowFactory, clock: Clock, rules: GrantRules) -> None:
        self._uow, self._clock, self._rules = uow, clock, rules

    @property
    def bonus(self) -> int:
        return self._rules.referral_bonus

    async def __call__(self, invitee: UserId, inviter: UserId) -> Referral:
        now = self._clock.now()
        async with self._uow() as uow:
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
            assert inviter_account is not None
            await uow.referrals.add(referral)
            amount, expires_at = self._rules.referral_bonus, self._rules.expires_at(LotKind.REFERRAL, now)
            if amount > 0:
                invitee_account = await load_account(uow, invitee, create=True)
                for account, lot_id, why in (
                    (invitee_account, referral.invitee_lot, f"invited by {inviter}"),
                    (inviter_account, referral.inviter_lot, f"invited {invitee}"),
                ):
                    account.grant(lot_id, LotKind.REFERRAL, amount, now, expires_at)
                    await uow.grants.add(
                        GrantRecord(lot_id, account.account_id, LotKind.REFERRAL, amount, "referral", why, now)
                    )
                payload = {"screen": "referral_rewarded", "amount": amount}
                await uow.outbox.add(OutboxMessage(inviter, "screen", payload, f"ref:{invitee}:inviter"))
            await uow.commit()
        return referral
