"""Payments: each external transaction credits coins exactly once, a repeated notification
must describe the same payment, and reconciliation finds what either side is missing."""

from datetime import UTC, datetime, timedelta

import attrs
import pytest

from videocopies.domain.coins import CoinAccount, LotExists, LotKind
from videocopies.domain.payments import (
    Payment,
    PaymentForAnotherAccount,
    PaymentMismatch,
    ProviderTransaction,
    reconcile,
)
from videocopies.domain.shared import UserId

T0 = datetime(2026, 1, 1, 12, tzinfo=UTC)
USER = UserId(1001)
PAYMENT = Payment("charge-1", USER, coins=100, paid_amount=50, currency="XTR", received_at=T0)


def tx(external_id: str, user: int = USER, paid: int = 50, currency: str = "XTR") -> ProviderTransaction:
    return ProviderTransaction(external_id, UserId(user), paid, currency)


def paid(external_id: str, user: int = USER, amount: int = 50, currency: str = "XTR") -> Payment:
    return Payment(external_id, UserId(user), 100, amount, currency, T0)


# --- crediting ----------------------------------------------------------------------------


def test_a_payment_credits_a_purchase_lot_named_after_the_external_id():
    account = CoinAccount(USER)

    lot = PAYMENT.credit(account, T0, expires_at=None)

    assert lot.lot_id == PAYMENT.lot_id == "pay:charge-1"
    assert (lot.kind, lot.amount, lot.available, lot.expires_at) == (LotKind.PURCHASE, 100, 100, None)
    assert account.lots == [lot]
    assert account.balance(T0).available == 100


def test_a_payment_can_credit_coins_that_expire():
    account = CoinAccount(USER)

    PAYMENT.credit(account, T0, expires_at=T0 + timedelta(days=90))

    assert account.balance(T0 + timedelta(days=90)).expired == 100


def test_the_account_refuses_a_second_credit_of_the_same_payment():
    account = CoinAccount(USER)
    PAYMENT.credit(account, T0, expires_at=None)
    retried = attrs.evolve(PAYMENT, received_at=T0 + timedelta(minutes=1))

    with pytest.raises(LotExists) as refused:
        retried.credit(account, T0 + timedelta(minutes=1), expires_at=None)

    assert refused.value.lot_id == "pay:charge-1"
    assert len(account.lots) == 1
    assert account.balance(T0).granted == 100


def test_a_payment_credits_only_its_payers_account():
    account = CoinAccount(UserId(2002))

    with pytest.raises(PaymentForAnotherAccount) as refused:
        PAYMENT.credit(account, T0, expires_at=None)

    assert (refused.value.external_id, refused.value.account_id) == ("charge-1", 2002)
    assert account.lots == []


# --- repeated notifications ---------------------------------------------------------------


def test_a_repeated_notification_with_the_same_terms_is_the_same_payment():
    PAYMENT.same_terms(attrs.evolve(PAYMENT, received_at=T0 + timedelta(hours=1)))


@pytest.mark.parametrize(
    ("field", "value"), [("user_id", UserId(2002)), ("coins", 220), ("paid_amount", 100), ("currency", "USD")]
)
def test_a_repeated_notification_with_other_terms_is_a_mismatch(field, value):
    with pytest.raises(PaymentMismatch) as refused:
        PAYMENT.same_terms(attrs.evolve(PAYMENT, **{field: value}))

    assert (refused.value.external_id, refused.value.field) == ("charge-1", field)


# --- reconciliation -----------------------------------------------------------------------


def test_matching_lists_reconcile_clean():
    report = reconcile([tx("c-1"), tx("c-2")], [paid("c-2"), paid("c-1")])

    assert report.clean
    assert (report.missing, report.unknown, report.mismatched) == ((), (), ())


def test_a_provider_transaction_we_never_recorded_is_missing():
    report = reconcile([tx("c-1"), tx("c-2")], [paid("c-1")])

    assert report.missing == (tx("c-2"),)
    assert not report.clean


def test_a_payment_the_provider_does_not_know_is_unknown():
    report = reconcile([tx("c-1")], [paid("c-1"), paid("c-9")])

    assert report.unknown == (paid("c-9"),)
    assert report.missing == ()
    assert not report.clean


@pytest.mark.parametrize(
    "theirs", [tx("c-1", user=2002), tx("c-1", paid=100), tx("c-1", currency="USD")],
    ids=["other-user", "other-amount", "other-currency"],
)
def test_the_same_id_with_other_terms_is_mismatched(theirs):
    ours = paid("c-1")

    report = reconcile([theirs], [ours])

    assert report.mismatched == ((theirs, ours),)
    assert (report.missing, report.unknown) == ((), ())


def test_a_transaction_the_provider_lists_twice_counts_once():
    report = reconcile([tx("c-1"), tx("c-2"), tx("c-1"), tx("c-2")], [paid("c-1")])

    assert report.missing == (tx("c-2"),)
    assert report.unknown == ()
    assert report.mismatched == ()


def test_reconciliation_reads_any_iterables():
    report = reconcile(iter([tx("c-1")]), (p for p in [paid("c-1")]))

    assert report.clean
