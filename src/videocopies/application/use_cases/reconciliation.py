"""Reconciliation: the provider's own list of transactions against ours. What we missed is
credited, refunds left pending are finished, and a credited payment the provider does not
know is reversed. A list that holds none of our payments is taken for another bot's (the
wrong token) and acted on only when the operator says so."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import attrs

from videocopies.application.errors import ProviderUnavailable, RefundRefused
from videocopies.application.ports import Clock, PaymentProvider
from videocopies.application.use_cases._common import UowFactory, load_account
from videocopies.application.use_cases.announcements import PaymentReversed
from videocopies.application.use_cases.payments import CreditPayment, CreditPaymentCommand, RefundPayment
from videocopies.domain.payments import (
    Payment,
    PaymentClaim,
    ProviderTransaction,
    ReconciliationReport,
    Refund,
    Reversal,
    looks_foreign,
    reconcile,
    to_reverse,
)


@attrs.frozen
class ReconciliationResult:
    report: ReconciliationReport
    credited: tuple[str, ...]
    uncreditable: tuple[str, ...]  # provider amounts that match no coin package
    refunds_finished: tuple[str, ...] = ()
    refunds_failed: tuple[tuple[str, str], ...] = ()  # (external id, why), still to be looked at
    reversed: tuple[Reversal, ...] = ()  # credited payments the provider does not know, taken back now
    reversed_before: tuple[str, ...] = ()  # taken back by an earlier run
    unconfirmed: tuple[PaymentClaim, ...] = ()  # claims edge made that the provider does not list
    foreign: bool = False  # the list holds none of our payments: nothing was credited or reversed

    @property
    def unexplained(self) -> tuple[Payment, ...]:
        """Payments the provider does not know that are not reversed (yet)."""
        done = {*self.reversed_before, *(r.external_id for r in self.reversed)}
        return tuple(p for p in self.report.unknown if p.external_id not in done)

    @property
    def needs_attention(self) -> bool:
        r = self.report
        return bool(
            self.uncreditable or self.refunds_failed or r.mismatched or self.unexplained or r.refunded_elsewhere
            or self.reversed or self.unconfirmed or self.foreign
        )

    def lines(self) -> list[str]:
        """The report as an operator reads it."""
        r = self.report
        out = [
            "NOTHING CREDITED OR REVERSED: the provider's list holds none of our payments; is this the bot's"
            " own token? (--trust-list acts on it anyway)",
        ] if self.foreign else []
        out += [
            f"credited: {len(self.credited)} {' '.join(self.credited)}".rstrip(),
            f"uncreditable (no package matches): {' '.join(self.uncreditable) or '-'}",
            f"unknown to the provider: {' '.join(p.external_id for p in self.unexplained) or '-'}",
            "reversed (unknown to the provider): "
            + (" ".join(f"{v.external_id} ({v.taken} taken back, {v.owed} owed)" for v in self.reversed) or "-"),
            "unconfirmed claims: "
            + (" ".join(f"{c.external_id} (user {c.user_id}, from {c.node or '?'})" for c in self.unconfirmed) or "-"),
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
        clock: Clock | None = None,
        reverse_after: timedelta = timedelta(minutes=10),
    ) -> None:
        """`reverse_after`: how old a payment the provider's list lacks must be before it is
        reversed (the list is read before ours, and another machine's clock may run ahead).
        No `clock`: nothing is reversed, only reported."""
        self._uow, self._provider, self._credit, self._coins_for = uow, provider, credit, coins_for
        self._refunds, self._clock, self._reverse_after = refunds, clock, reverse_after

    async def __call__(self, trust_list: bool = False) -> ReconciliationResult:
        """`trust_list`: act on the provider's list even when it holds none of our payments."""
        listed_at = self._clock.now() if self._clock is not None else None
        provider: list[ProviderTransaction] = [tx async for tx in self._provider.transactions()]
        async with self._uow() as uow:
            ours = list(await uow.payments.list())
            refunds = {r.external_id: r for r in await uow.refunds.list()}
            reversed_before = tuple(r.external_id for r in await uow.reversals.list())
            claims = await uow.claims.unconfirmed()
        report = reconcile(provider, ours, refunds.values())
        charged = {tx.external_id for tx in provider if not tx.refund}
        unconfirmed = tuple(c for c in claims if c.external_id not in charged)
        foreign = looks_foreign(len(ours), sum(1 for p in ours if p.external_id in charged)) and not trust_list
        if foreign:
            return ReconciliationResult(report, (), (), reversed_before=reversed_before, unconfirmed=unconfirmed,
                                        foreign=True)
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
        reversals: list[Reversal] = []
        if listed_at is not None:
            due = to_reverse(report.unknown, reversed_before, refunds, listed_at - self._reverse_after)
            reversals = [r for p in due if (r := await self._reverse(p)) is not None]
        return ReconciliationResult(
            report, tuple(credited), tuple(uncreditable), finished, failed, tuple(reversals), reversed_before,
            unconfirmed,
        )

    async def _reverse(self, payment: Payment) -> Reversal | None:
        """Take back what is left of the payment's coins, in one transaction with its record and
        the user's message; the payment row stays."""
        assert self._clock is not None
        now = self._clock.now()
        async with self._uow() as uow:
            if any(r.external_id == payment.external_id for r in await uow.reversals.list()):
                return None  # another run was first
            account = await load_account(uow, payment.user_id, lots=[payment.lot_id])
            reversal = Reversal.of(payment, account, "unknown to the payment provider", now)
            await uow.reversals.add(reversal)
            await uow.record(PaymentReversed(payment.user_id, payment.external_id, payment.paid_amount, reversal.taken))
            await uow.commit()
        return reversal

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

