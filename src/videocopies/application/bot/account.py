"""The conversation about coins: the balance, the packages on sale and a payment for one,
and the referral a newcomer's invite link brings."""

from __future__ import annotations

from typing import Any

from videocopies.application import use_cases as uc
from videocopies.application.bot.replies import Replies, account_view
from videocopies.application.ports import BotUser, Clock, PaidInvoice
from videocopies.application.use_cases._common import UowFactory
from videocopies.application.use_cases.joined import new_or_joined
from videocopies.domain.coins import parse_invite
from videocopies.domain.payments import PackageCatalog, PaymentMismatch
from videocopies.domain.shared import DomainError, UserId


class AccountTalk:
    """Part of Conversation (which holds these)."""

    uow: UowFactory
    clock: Clock
    packages: PackageCatalog
    credit_payment: uc.TakePayment | uc.CreditPayment | None
    reward_referral: uc.RewardReferral | None

    async def _referral(self, user: BotUser, argument: str, first_contact: bool) -> int:
        """A new user who came through an invite link: the referral is recorded, and both sides
        get the bonus with this user's first confirmed order (the amount is announced now).
        Anyone else (or a bad link) simply starts; the refusal is not the user's concern."""
        inviter = parse_invite(argument)
        if inviter is None or not first_contact or self.reward_referral is None:
            return 0
        try:
            await self.reward_referral(user.user_id, inviter)
        except DomainError:
            return 0
        return self._referral_bonus()

    def _referral_bonus(self) -> int:
        return self.reward_referral.bonus if self.reward_referral is not None else 0

    def _packages(self, replies: Replies) -> None:
        replies.screen("packages", packages=[[p.stars, p.coins] for p in self.packages.packages])

    async def _paid(self, user: BotUser, paid: PaidInvoice, replies: Replies) -> None:
        """Credit the coins once per charge (where the provider can be asked, once it lists the
        charge); the 'coins credited' screen is written with them. A repeated or late
        notification (reconciliation credited it already) says nothing."""
        coins = self.packages.coins_for(paid.invoice_payload, paid.total_amount, paid.currency)
        if coins is None or self.credit_payment is None:
            replies.screen("payment_unmatched", stars=paid.total_amount)
            return
        command = uc.CreditPaymentCommand(paid.charge_id, user.user_id, coins, paid.total_amount, paid.currency,
                                          paid.invoice_payload, paid.node)
        try:
            await self.credit_payment(command)
        except PaymentMismatch:
            replies.screen("payment_unmatched", stars=paid.total_amount)

    async def _balance(self, user_id: UserId) -> dict[str, Any]:
        now = self.clock.now()
        async with new_or_joined(self.uow) as uow:
            account = await uow.accounts.get(user_id)
        return account_view(account, now)
