"""Coins bought with an external payment: credited once per transaction id (where the
provider can be asked, only for a charge it lists), refunded on an operator's word while
unspent, and reconciled with the provider's own list (a payment it does not know reversed)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import timedelta

import attrs

from videocopies.application.errors import (
    Conflict,
    NotFound,
    ProviderNotConfigured,
    ProviderUnavailable,
    RefundRefused,
)
from videocopies.application.ports import Clock, PaymentProvider
from videocopies.application.use_cases._common import UowFactory, load_account
from videocopies.application.use_cases.announcements import CoinsCredited, PaymentConfirming, PurchaseRefunded
from videocopies.domain.coins import LotExists
from videocopies.domain.payments import (
    Payment,
    PaymentClaim,
    Refund,
    RefundState,
    Reversal,
)
from videocopies.domain.shared import UserId


@attrs.frozen
class CreditPaymentCommand:
    external_id: str
    user_id: UserId
    coins: int
    paid_amount: int
    currency: str
    invoice_payload: str | None = None
    node: str | None = None  # the edge node that reported the payment, when it came from one


class CreditPayment:
    """The payment row, its purchase lot and the 'coins credited' message are written in one
    transaction; the same external id again is a no-op (and must describe the same payment)."""

    def __init__(self, uow: UowFactory, clock: Clock, valid_for: timedelta | None) -> None:
        self._uow, self._clock, self._valid_for = uow, clock, valid_for

    async def __call__(self, cmd: CreditPaymentCommand) -> bool:
        try:
            return await self._credit(cmd)
        except (Conflict, LotExists):
            # The notification and reconciliation credited the same charge at the same moment:
            # the other one won (its account row or its lot got there first, after this one
            # found no payment), and this one now finds the payment (and checks its terms).
            return await self._credit(cmd)

    async def _credit(self, cmd: CreditPaymentCommand) -> bool:
        now = self._clock.now()
        payment = Payment(cmd.external_id, cmd.user_id, cmd.coins, cmd.paid_amount, cmd.currency, now)
        async with self._uow() as uow:
            if (known := await uow.payments.get(cmd.external_id)) is not None:
                known.same_terms(payment)
                return False
            account = await load_account(uow, cmd.user_id, create=True, lots=[payment.lot_id])
            expires_at = now + self._valid_for if self._valid_for is not None else None
            payment.credit(account, now, expires_at)
            await uow.payments.add(payment)
            await uow.record(CoinsCredited(cmd.user_id, cmd.external_id, cmd.coins, account.balance(now).available))
            await uow.commit()
        return True


class ConfirmPayments:
    """Reads what the provider listed since the last read (a cursor into its chronological
    list), and credits every claim whose charge it lists, on the provider's terms: its user,
    its amount and the offer paid for, never what the claim said.

    Callers at once share reads: a burst of payment notices (or a flood of invented ones) asks
    the provider about twice, not once per notice, which would also run into its rate limit. A
    caller never takes the answer of a read that started before it came, since that read may
    have looked for claims before the caller's was written."""

    def __init__(
        self, uow: UowFactory, provider: PaymentProvider, credit: CreditPayment,
        coins_for: Callable[[str | None, int, str], int | None],
    ) -> None:
        self._uow, self._provider, self._credit, self._coins_for = uow, provider, credit, coins_for
        self._one_at_a_time = asyncio.Lock()  # FIFO: callers waiting take the next read in turn
        self._started = self._finished = 0  # reads, numbered as they start
        self._answer: tuple[str, ...] | BaseException = ()

    async def __call__(self) -> tuple[str, ...]:
        """The external ids credited by a read that started after this call. Raises
        ProviderNotConfigured (no provider) or ProviderUnavailable, before anything is written."""
        first_after_me = self._started + 1
        async with self._one_at_a_time:
            if self._finished < first_after_me:
                self._started += 1
                try:
                    self._answer = await self._read()
                except (ProviderNotConfigured, ProviderUnavailable) as refused:
                    self._answer = refused
                self._finished = self._started  # reads run one at a time, under the lock
            if isinstance(self._answer, BaseException):
                raise self._answer
            return self._answer

    async def _read(self) -> tuple[str, ...]:
        async with self._uow() as uow:
            position = await uow.claims.cursor()
        charges, position = await self._provider.since(position)  # no transaction open meanwhile
        async with self._uow() as uow:
            await uow.claims.record(charges, position)
            await uow.commit()
        async with self._uow() as uow:
            confirmable = await uow.claims.confirmable()
        credited = []
        for _claim, tx in confirmable:
            coins = self._coins_for(tx.payload, tx.paid_amount, tx.currency)
            if coins is None:
                continue  # no package matches: reconciliation reports it as uncreditable
            if await self._credit(CreditPaymentCommand(tx.external_id, tx.user_id, coins, tx.paid_amount, tx.currency)):
                credited.append(tx.external_id)
        return tuple(credited)


class TakePayment:
    """A payment edge reported (Telegram's successful_payment). An edge token can report any
    charge id for any user, so where the provider can be asked the report is only a claim:
    coins come when the provider lists the charge, looked up at once and again after short
    waits (a list may lag its notice); a claim it never lists stays unconfirmed, for the panel.
    With no provider configured, the payment is credited at once, as the notice says; a
    reconciliation run where the provider is reachable reverses it if the provider does not know it."""

    def __init__(
        self, uow: UowFactory, clock: Clock, credit: CreditPayment, confirm: ConfirmPayments,
        waits: tuple[float, ...] = (0.0, 0.3, 1.0),
    ) -> None:
        self._uow, self._clock, self._credit, self._confirm, self._waits = uow, clock, credit, confirm, waits

    async def __call__(self, cmd: CreditPaymentCommand) -> bool:
        """True when this call credited the payment."""
        now = self._clock.now()
        async with self._uow() as uow:
            known = await uow.payments.get(cmd.external_id)
            if known is None:
                await uow.claims.add(PaymentClaim(
                    cmd.external_id, cmd.user_id, cmd.paid_amount, cmd.currency, cmd.invoice_payload, cmd.node, now,
                ))
                await uow.commit()
        if known is not None:  # a repeated notice, or reconciliation was first: it must say the same
            known.same_terms(Payment(cmd.external_id, cmd.user_id, cmd.coins, cmd.paid_amount, cmd.currency, now))
            return False
        for wait in self._waits:
            await asyncio.sleep(wait)
            try:
                credited = await self._confirm()
            except ProviderNotConfigured:
                return await self._credit(cmd)
            except ProviderUnavailable:
                await self._confirming(cmd)
                return False
            if cmd.external_id in credited:
                return True
            async with self._uow() as uow:
                if await uow.payments.get(cmd.external_id) is not None:
                    return False  # another core confirmed it
        return False

    async def _confirming(self, cmd: CreditPaymentCommand) -> None:
        """The provider cannot be asked now: the user hears the payment arrived, and the coins
        follow when reconciliation finds the charge."""
        async with self._uow() as uow:
            await uow.record(PaymentConfirming(cmd.user_id, cmd.external_id, cmd.paid_amount))
            await uow.commit()


class PaymentDoubts:
    """What an operator looks into: claims no credited payment answers, and reversals."""

    def __init__(self, uow: UowFactory) -> None:
        self._uow = uow

    async def __call__(self) -> tuple[list[PaymentClaim], list[Reversal]]:
        async with self._uow() as uow:
            return list(await uow.claims.unconfirmed()), list(await uow.reversals.list())


@attrs.frozen
class RefundPaymentCommand:
    external_id: str
    requested_by: str  # the operator's node, or the command line
    reason: str


class RefundPayment:
    """An operator gives a purchase back, only while none of its coins was spent, set aside
    or expired. The coins leave the account (refund pending) before the provider is asked;
    its answer then finishes the refund, or a refusal gives the coins back. A crash or an
    unclear answer leaves the refund pending, and asking again (or reconciliation) finishes it."""

    def __init__(self, uow: UowFactory, clock: Clock, provider: PaymentProvider) -> None:
        self._uow, self._clock, self._provider = uow, clock, provider

    async def __call__(self, cmd: RefundPaymentCommand) -> Refund:
        now = self._clock.now()
        async with self._uow() as uow:
            payment = await uow.payments.get(cmd.external_id)
            if payment is None:
                raise NotFound("payment", cmd.external_id)
            refund = await uow.refunds.get(cmd.external_id)
            if refund is None or refund.state is not RefundState.PENDING:
                account = await load_account(uow, payment.user_id, lots=[payment.lot_id])
                refund = Refund.request(payment, account, cmd.requested_by, cmd.reason, now, refund)
                await uow.refunds.save(refund)
                await uow.commit()
        return await self.finish(refund)

    async def finish(self, refund: Refund, confirmed: bool = False) -> Refund:
        """Ask the provider (unless it `confirmed` the refund already) and record its answer."""
        if not confirmed:
            try:
                await self._provider.refund(refund.user_id, refund.external_id)
            except RefundRefused as refused:
                await self._record(refund.external_id, refused.reason)
                raise
        return await self._record(refund.external_id, None)

    async def _record(self, external_id: str, refused: str | None) -> Refund:
        now = self._clock.now()
        async with self._uow() as uow:
            refund = await uow.refunds.get(external_id)
            payment = await uow.payments.get(external_id)
            if refund is None or payment is None:
                raise NotFound("refund", external_id)
            if refund.state is RefundState.PENDING:
                if refused is None:
                    refund.complete(now)
                    await uow.record(PurchaseRefunded(refund.user_id, external_id, refund.coins, payment.paid_amount))
                else:
                    account = await load_account(uow, payment.user_id, lots=[payment.lot_id])
                    refund.refuse(payment, account, refused, now)
                await uow.refunds.save(refund)
                await uow.commit()
        return refund
