"""Coins bought with an external payment: credited once per transaction id, refunded on an
operator's word while unspent, and reconciled with the provider's own list."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import attrs

from videocopies.application.errors import Conflict, NotFound, ProviderUnavailable, RefundRefused
from videocopies.application.ports import Clock, OutboxMessage, PaymentProvider
from videocopies.application.use_cases._common import UowFactory, load_account
from videocopies.domain.coins import LotExists
from videocopies.domain.payments import (
    Payment,
    ProviderTransaction,
    ReconciliationReport,
    Refund,
    RefundState,
    reconcile,
)
from videocopies.domain.shared import UserId


@attrs.frozen
class CreditPaymentCommand:
    external_id: str
    user_id: UserId
    coins: int
    paid_amount: int
    currency: str


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
            account = await load_account(uow, cmd.user_id, create=True)
            expires_at = now + self._valid_for if self._valid_for is not None else None
            payment.credit(account, now, expires_at)
            await uow.payments.add(payment)
            payload = {"screen": "coins_credited", "coins": cmd.coins, "available": account.balance(now).available}
            await uow.outbox.add(OutboxMessage(cmd.user_id, "screen", payload, f"paid:{cmd.external_id}"))
            await uow.commit()
        return True


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
                account = await load_account(uow, payment.user_id)
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
                    payload = {"screen": "refunded", "coins": refund.coins, "stars": payment.paid_amount}
                    await uow.outbox.add(OutboxMessage(refund.user_id, "screen", payload, f"refund:{external_id}"))
                else:
                    refund.refuse(payment, await load_account(uow, payment.user_id), refused, now)
                await uow.refunds.save(refund)
                await uow.commit()
        return refund


@attrs.frozen
class ReconciliationResult:
    report: ReconciliationReport
    credited: tuple[str, ...]
    uncreditable: tuple[str, ...]  # provider amounts that match no coin package
    refunds_finished: tuple[str, ...] = ()
    refunds_failed: tuple[tuple[str, str], ...] = ()  # (external id, why), still to be looked at

    def lines(self) -> list[str]:
        """The report as an operator reads it."""
        r = self.report
        out = [
            f"credited: {len(self.credited)} {' '.join(self.credited)}".rstrip(),
            f"uncreditable (no package matches): {' '.join(self.uncreditable) or '-'}",
            f"unknown to the provider: {' '.join(p.external_id for p in r.unknown) or '-'}",
            f"mismatched: {' '.join(tx.external_id for tx, _ in r.mismatched) or '-'}",
            f"refunds finished: {' '.join(self.refunds_finished) or '-'}",
            f"refunds failed: {' '.join(f'{e} ({why})' for e, why in self.refunds_failed) or '-'}",
            f"refunded by the provider, not by us: {' '.join(tx.external_id for tx in r.refunded_elsewhere) or '-'}",
        ]
        return out


class ReconcilePayments:
    """Compare the provider's transactions with ours: credit what we missed, finish the
    refunds left pending, and report what does not add up. Running it twice changes nothing."""

    def __init__(
        self,
        uow: UowFactory,
        provider: PaymentProvider,
        credit: CreditPayment,
        coins_for: Callable[[str | None, int, str], int | None],
        refunds: RefundPayment | None = None,
    ) -> None:
        self._uow, self._provider, self._credit, self._coins_for = uow, provider, credit, coins_for
        self._refunds = refunds

    async def __call__(self) -> ReconciliationResult:
        provider: list[ProviderTransaction] = [tx async for tx in self._provider.transactions()]
        async with self._uow() as uow:
            ours = list(await uow.payments.list())
            refunds = {r.external_id: r for r in await uow.refunds.list()}
        report = reconcile(provider, ours, refunds.values())
        credited, uncreditable = [], []
        for tx in report.missing:
            coins = self._coins_for(tx.payload, tx.paid_amount, tx.currency)
            if coins is None:
                uncreditable.append(tx.external_id)
                continue
            command = CreditPaymentCommand(tx.external_id, tx.user_id, coins, tx.paid_amount, tx.currency)
            if await self._credit(command):
                credited.append(tx.external_id)
        finished, failed = await self._finish_refunds(report, refunds)
        return ReconciliationResult(report, tuple(credited), tuple(uncreditable), finished, failed)

    async def _finish_refunds(
        self, report: ReconciliationReport, refunds: dict[str, Refund]
    ) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
        if self._refunds is None:
            return (), ()
        finished: list[str] = []
        failed: list[tuple[str, str]] = []
        for external_id in (*report.refunds_confirmed, *report.refunds_unsent):
            try:
                await self._refunds.finish(refunds[external_id], confirmed=external_id in report.refunds_confirmed)
                finished.append(external_id)
            except (RefundRefused, ProviderUnavailable) as error:
                failed.append((external_id, str(error)))
        return tuple(finished), tuple(failed)

