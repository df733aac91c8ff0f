"""Refunds give back a whole untouched purchase; referrals reward both sides once, never in a
circle; coin packages say what a payment buys; reconciliation sees refunds on both sides."""

from datetime import UTC, datetime, timedelta

import pytest

from videocopies.domain.coins import (
    AlreadyReferred,
    CoinAccount,
    GrantRules,
    LotKind,
    LotNotRefundable,
    Referral,
    ReferralLoop,
    SelfReferral,
    UnknownInviter,
    parse_invite,
)
from videocopies.domain.payments import (
    DEFAULT_PACKAGES,
    AlreadyRefunded,
    CoinPackage,
    OfferWithdrawn,
    Payment,
    ProviderTransaction,
    Refund,
    RefundState,
    reconcile,
)
from videocopies.domain.shared import OrderId, UserId

T0 = datetime(2026, 1, 1, 12, tzinfo=UTC)
USER = UserId(1001)
PAYMENT = Payment("ch-1", USER, coins=100, paid_amount=50, currency="XTR", received_at=T0)


def bought(expires_at: datetime | None = None) -> CoinAccount:
    account = CoinAccount(USER)
    PAYMENT.credit(account, T0, expires_at)
    return account


# --- refunds -------------------------------------------------------------------------------


def test_an_untouched_purchase_is_refunded_whole_and_the_ledger_still_adds_up():
    account = bought()
    refund = Refund.request(PAYMENT, account, "control-1", "mistake", T0)
    assert (refund.state, refund.coins) == (RefundState.PENDING, 100)
    balance = account.balance(T0)
    assert (balance.available, balance.refunded, balance.granted) == (0, 100, 100) and balance.balanced
    assert refund.complete(T0) and not refund.complete(T0)
    assert refund.state is RefundState.DONE


def test_a_purchase_with_coins_set_aside_or_spent_is_not_refunded():
    account = bought()
    account.reserve(OrderId("o-1"), 10, T0)
    with pytest.raises(LotNotRefundable) as refused:
        Refund.request(PAYMENT, account, "control-1", "mistake", T0)
    assert (refused.value.amount, refused.value.available) == (100, 90)
    account.debit(OrderId("o-1"), 4, "copy:0")
    account.release(OrderId("o-1"), T0)
    with pytest.raises(LotNotRefundable):
        Refund.request(PAYMENT, account, "control-1", "mistake", T0)
    assert account.balance(T0).refunded == 0


def test_an_expired_purchase_is_not_refunded():
    account = bought(expires_at=T0 + timedelta(days=1))
    with pytest.raises(LotNotRefundable):
        Refund.request(PAYMENT, account, "control-1", "late", T0 + timedelta(days=2))


def test_a_refused_refund_gives_the_coins_back_and_may_be_asked_again():
    account = bought()
    refund = Refund.request(PAYMENT, account, "control-1", "mistake", T0)
    refund.refuse(PAYMENT, account, "CHARGE_ID_INVALID", T0)
    assert refund.state is RefundState.REFUSED and account.balance(T0).available == 100
    again = Refund.request(PAYMENT, account, "control-1", "second try", T0, earlier=refund)
    assert again.state is RefundState.PENDING
    with pytest.raises(AlreadyRefunded):
        Refund.request(PAYMENT, account, "control-1", "third", T0, earlier=again)


def test_coins_given_back_after_their_lot_expired_come_back_expired():
    account = bought(expires_at=T0 + timedelta(days=1))
    Refund.request(PAYMENT, account, "control-1", "mistake", T0).refuse(
        PAYMENT, account, "no", T0 + timedelta(days=2)
    )
    lot = account.lot(PAYMENT.lot_id)
    assert (lot.available, lot.expired, lot.refunded) == (0, 100, 0)


# --- referrals and grant rules -------------------------------------------------------------


def admit(invitee: int, inviter: int, **facts: object) -> Referral:
    defaults: dict[str, object] = {"inviter_known": True, "invited_before_by": None, "inviter_chain": ()}
    return Referral.admit(UserId(invitee), UserId(inviter), T0, **{**defaults, **facts})  # type: ignore[arg-type]


def test_a_referral_names_one_lot_for_each_side_after_the_invited_user():
    referral = admit(2, 1)
    assert (referral.invitee_lot, referral.inviter_lot) == ("ref:2:invited", "ref:2:inviter")


@pytest.mark.parametrize(
    ("facts", "refusal"),
    [
        ({"invitee": 1}, SelfReferral),
        ({"invited_before_by": UserId(3)}, AlreadyReferred),
        ({"inviter_known": False}, UnknownInviter),
        ({"inviter_chain": (UserId(5), UserId(2))}, ReferralLoop),
    ],
)
def test_referral_refusals(facts: dict, refusal: type[Exception]):
    invitee = facts.pop("invitee", 2)
    with pytest.raises(refusal):
        admit(invitee, 1, **facts)


@pytest.mark.parametrize(
    ("argument", "inviter"), [("ref_42", 42), ("ref_", None), ("ref_x1", None), ("42", None), ("", None),
                              ("ref_" + "9" * 16, None)]
)
def test_an_invite_argument_names_the_inviter(argument: str, inviter: int | None):
    assert parse_invite(argument) == inviter


def test_each_kind_of_coin_lives_as_configured():
    rules = GrantRules(validity={LotKind.START: timedelta(days=7), LotKind.PURCHASE: None})
    assert rules.expires_at(LotKind.START, T0) == T0 + timedelta(days=7)
    assert rules.expires_at(LotKind.PURCHASE, T0) is None
    assert rules.expires_at(LotKind.REFERRAL, T0) == T0 + timedelta(days=60)  # the default


# --- packages ------------------------------------------------------------------------------


def test_a_package_is_sold_only_as_offered():
    package = DEFAULT_PACKAGES.check("buy:100:220", "XTR", 100)
    assert package == CoinPackage(100, 220)
    for payload, currency, amount in (
        ("buy:100:250", "XTR", 100), ("buy:100:220", "XTR", 99), ("buy:100:220", "USD", 100), ("junk", "XTR", 100),
    ):
        with pytest.raises(OfferWithdrawn):
            DEFAULT_PACKAGES.check(payload, currency, amount)


def test_a_settled_payment_buys_what_its_offer_said_else_the_package_at_that_price():
    assert DEFAULT_PACKAGES.coins_for("buy:100:250", 100, "XTR") == 250  # sold before the price list changed
    assert DEFAULT_PACKAGES.coins_for(None, 250, "XTR") == 600
    assert DEFAULT_PACKAGES.coins_for("buy:100:250", 50, "XTR") is None
    assert DEFAULT_PACKAGES.coins_for(None, 77, "XTR") is None
    assert DEFAULT_PACKAGES.coins_for(None, 50, "USD") is None


# --- reconciliation with refunds -----------------------------------------------------------


def test_reconciliation_sees_refunds_on_both_sides():
    charge = ProviderTransaction("ch-1", USER, 50, "XTR")
    back = ProviderTransaction("ch-1", USER, 50, "XTR", refund=True)
    pending = Refund.request(PAYMENT, bought(), "control-1", "x", T0)

    assert reconcile([charge], [PAYMENT], [pending]).refunds_unsent == ("ch-1",)
    confirmed = reconcile([charge, back], [PAYMENT], [pending])
    assert confirmed.refunds_confirmed == ("ch-1",) and confirmed.refunds_unsent == ()
    elsewhere = reconcile([charge, back], [PAYMENT], [])
    assert elsewhere.refunded_elsewhere == (back,) and not elsewhere.clean
    never_credited = reconcile([ProviderTransaction("ch-2", USER, 50, "XTR"),
                                ProviderTransaction("ch-2", USER, 50, "XTR", refund=True)], [], [])
    assert never_credited.missing == ()
    pending.complete(T0)
    assert reconcile([charge, back], [PAYMENT], [pending]).clean
