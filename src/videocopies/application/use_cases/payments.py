"""Coins bought with an external payment: credited once per transaction id, and reconciled."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import attrs

from videocopies.application.ports import Clock, PaymentProvider
from videocopies.application.use_cases._common import UowFactory, load_account
from videocopies.domain.payments import Payment, ProviderTransaction, ReconciliationReport, reconcile
from videocopies.domain.shared import UserId


@attrs.frozen
class CreditPaymentCommand:
    external_id: str
    user_id: UserId
    coins: int
    paid_amount: int
    currency: str


class CreditPayment:
    """The payment row and its purchase lot are written in one transaction; the same
    external id again is a no-op (and must describe the same payment)."""

    def __init__(self, uow: UowFactory, clock: Clock, valid_for: timedelta | None) -> None:
        self._uow, self._clock, self._valid_for = uow, clock, valid_for

    async def __call__(self, cmd: CreditPaymentCommand) -> bool:
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
            await uow.commit()
        return True


@attrs.frozen
class ReconciliationResult:
    report: ReconciliationReport
    credited: tuple[str, ...]
    uncreditable: tuple[str, ...]  # provider amounts that match no coin package


class ReconcilePayments:
    """Compare the provider's transactions with ours and credit what we missed."""

    def __init__(
        self,
        uow: UowFactory,
        provider: PaymentProvider,
        credit: CreditPayment,
        coins_for: Callable[[int, str], int | None],
    ) -> None:
        self._uow, self._provider, self._credit, self._coins_for = uow, provider, credit, coins_for

    async def __call__(self) -> ReconciliationResult:
        provider: list[ProviderTransaction] = [tx async for tx in self._provider.transactions()]
        async with self._uow() as uow:
            ours = list(await uow.payments.list())
        report = reconcile(provider, ours)
        credited, uncreditable = [], []
        for tx in report.missing:
            coins = self._coins_for(tx.paid_amount, tx.currency)
            if coins is None:
                uncreditable.append(tx.external_id)
                continue
            command = CreditPaymentCommand(tx.external_id, tx.user_id, coins, tx.paid_amount, tx.currency)
            if await self._credit(command):
                credited.append(tx.external_id)
        return ReconciliationResult(report, tuple(credited), tuple(uncreditable))
