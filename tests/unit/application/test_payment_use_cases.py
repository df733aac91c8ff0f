"""Coins bought with Telegram Stars: each payment credits once, a repeat must match it, and
reconciliation credits what the provider settled but we never heard of."""

import attrs
import pytest

from videocopies.adapters.memory import InMemoryUnitOfWork
from videocopies.application import use_cases as uc
from videocopies.domain.coins import LotKind
from videocopies.domain.payments import PaymentMismatch, ProviderTransaction
from videocopies.domain.shared import UserId

USER = UserId(1001)
BUY = uc.CreditPaymentCommand("charge-1", USER, coins=100, paid_amount=50, currency="XTR")


async def test_a_payment_credits_a_purchase_lot_that_never_expires(shop):
    assert await shop.cases.credit_payment()(BUY) is True

    (lot,) = shop.store.accounts[USER].lots
    assert (lot.lot_id, lot.kind, lot.amount, lot.expires_at) == ("pay:charge-1", LotKind.PURCHASE, 100, None)
    assert shop.figures() == (100, 0, 0, 0)
    assert list(shop.store.payments) == ["charge-1"]


async def test_a_repeated_notification_of_the_same_payment_is_a_no_op(shop):
    await shop.grant(50)
    credit = shop.cases.credit_payment()
    await credit(BUY)

    assert await credit(BUY) is False

    assert shop.figures() == (150, 0, 0, 0)
    assert len(shop.store.accounts[USER].lots) == 2


@pytest.mark.parametrize(
    ("field", "value"), [("coins", 220), ("paid_amount", 100), ("currency", "USD"), ("user_id", UserId(2002))]
)
async def test_a_repeated_payment_id_with_other_terms_is_refused(shop, field, value):
    credit = shop.cases.credit_payment()
    await credit(BUY)
    other = attrs.evolve(BUY, **{field: value})

    with pytest.raises(PaymentMismatch) as refused:
        await credit(other)

    assert refused.value.field == field
    assert shop.figures() == (100, 0, 0, 0)
    assert set(shop.store.accounts) == {USER}


async def test_reconciliation_credits_what_we_missed_and_reports_what_the_provider_does_not_know(shop):
    credit = shop.cases.credit_payment()
    await credit(BUY)  # ours only: the provider does not list it
    await credit(uc.CreditPaymentCommand("charge-2", USER, 100, 50, "XTR"))  # both sides agree
    shop.service.gateways.payment_provider().settled.extend([
        ProviderTransaction("charge-2", USER, 50, "XTR"),
        ProviderTransaction("charge-3", USER, 100, "XTR"),  # missed: 100 Stars buy 220 coins
        ProviderTransaction("charge-3", USER, 100, "XTR"),  # listed twice
        ProviderTransaction("charge-4", UserId(2002), 77, "XTR"),  # no package costs 77 Stars
    ])

    result = await shop.cases.reconcile_payments()()

    assert [p.external_id for p in result.report.unknown] == ["charge-1"]
    assert [tx.external_id for tx in result.report.missing] == ["charge-3", "charge-4"]
    assert result.report.mismatched == ()
    assert result.credited == ("charge-3",)
    assert result.uncreditable == ("charge-4",)
    assert shop.figures() == (420, 0, 0, 0)
    assert UserId(2002) not in shop.store.accounts

    again = await shop.cases.reconcile_payments()()
    assert again.credited == ()
    assert [tx.external_id for tx in again.report.missing] == ["charge-4"]
    assert shop.figures() == (420, 0, 0, 0)


async def test_a_charge_credited_by_someone_else_meanwhile_credits_nothing_more(shop):
    """The notification and reconciliation race for one charge: the loser finds the winner's
    payment and does nothing, instead of failing."""
    other = uc.CreditPayment(lambda: InMemoryUnitOfWork(shop.store), shop.clock, None)
    raced: list[bool] = []

    class Racing(InMemoryUnitOfWork):
        async def commit(self) -> None:
            if not raced:
                raced.append(await other(BUY))  # commits first
            await super().commit()

    racing = uc.CreditPayment(lambda: Racing(shop.store), shop.clock, None)

    assert await racing(BUY) is False
    assert raced == [True]
    assert shop.figures() == (100, 0, 0, 0)
    assert [m.dedup_key for m in shop.outbox()] == ["paid:charge-1"]
