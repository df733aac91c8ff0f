"""Refunds, referrals, recorded grants and the expiry sweep behave the same on every backend:
memory, PostgreSQL, PostgreSQL via PgBouncer."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from videocopies.application import use_cases as uc
from videocopies.application.errors import ProviderUnavailable, RefundRefused
from videocopies.domain.coins import (
    AlreadyReferred,
    LotKind,
    LotNotRefundable,
    ReferralLoop,
    SelfReferral,
    UnknownInviter,
)
from videocopies.domain.payments import AlreadyRefunded, ProviderTransaction, RefundState
from videocopies.domain.shared import LotId, UserId

from .conftest import Backend

USER = UserId(42)
FRIEND = UserId(43)


async def figures(b: Backend, user: UserId = USER) -> tuple[int, int, int, int, int]:
    """available, reserved, debited, expired, refunded"""
    async with b.new_uow() as uow:
        account = await uow.accounts.get(user)
        assert account is not None
        got = account.balance(b.clock.now())
        assert got.balanced
        return got.available, got.reserved, got.debited, got.expired, got.refunded


async def bought(b: Backend, charge: str = "ch-1") -> None:
    b.provider.settled.append(ProviderTransaction(charge, USER, 50, "XTR", "buy:50:100"))
    assert await b.cases.credit_payment()(uc.CreditPaymentCommand(charge, USER, 100, 50, "XTR"))


async def screens(b: Backend, user: UserId = USER) -> list[str]:
    async with b.new_uow() as uow:
        return [m.payload.get("screen", m.kind) for _, m in await uow.outbox.pending(100) if m.user_id == user]


async def test_a_refund_waits_for_an_unreachable_provider_and_reconciliation_finishes_it(backend: Backend) -> None:
    b = backend
    await bought(b)
    b.provider.unreachable = True
    refund = uc.RefundPaymentCommand("ch-1", "control-1", "bought by mistake")
    with pytest.raises(ProviderUnavailable):
        await b.cases.refund_payment()(refund)
    assert await figures(b) == (0, 0, 0, 0, 100)  # taken back before the provider was asked
    async with b.new_uow() as uow:
        (pending,) = await uow.refunds.list()
    assert (pending.state, pending.requested_by, pending.reason) == (RefundState.PENDING, "control-1",
                                                                      "bought by mistake")
    b.provider.unreachable = False
    result = await b.cases.reconcile_payments()()
    assert result.refunds_finished == ("ch-1",)
    assert [tx.external_id for tx in b.provider.settled if tx.refund] == ["ch-1"]
    async with b.new_uow() as uow:
        done = await uow.refunds.get("ch-1")
    assert done is not None and done.state is RefundState.DONE and done.finished_at is not None
    with pytest.raises(AlreadyRefunded):
        await b.cases.refund_payment()(refund)
    assert (await b.cases.reconcile_payments()()).report.clean
    assert await screens(b) == ["coins_credited", "refunded"]


async def test_a_refund_made_whose_answer_was_lost_is_finished_without_asking_again(backend: Backend) -> None:
    b = backend
    await bought(b)
    b.provider.answers_lost = True  # as if core crashed right after Telegram refunded
    with pytest.raises(ProviderUnavailable):
        await b.cases.refund_payment()(uc.RefundPaymentCommand("ch-1", "control-1", "mistake"))
    result = await b.cases.reconcile_payments()()  # still losing answers: it need not ask
    assert (result.report.refunds_confirmed, result.refunds_finished) == (("ch-1",), ("ch-1",))
    assert [tx.external_id for tx in b.provider.settled if tx.refund] == ["ch-1"]
    assert await figures(b) == (0, 0, 0, 0, 100)
    assert (await b.cases.reconcile_payments()()).report.clean


async def test_a_refund_the_provider_refuses_gives_the_coins_back(backend: Backend) -> None:
    b = backend
    await bought(b)
    b.provider.settled.clear()  # the provider has no such charge
    with pytest.raises(RefundRefused):
        await b.cases.refund_payment()(uc.RefundPaymentCommand("ch-1", "control-1", "why not"))
    assert await figures(b) == (100, 0, 0, 0, 0)
    async with b.new_uow() as uow:
        refund = await uow.refunds.get("ch-1")
    assert refund is not None and refund.state is RefundState.REFUSED and refund.provider_answer == "CHARGE_ID_INVALID"


async def test_a_purchase_with_coins_set_aside_is_not_refunded(backend: Backend) -> None:
    b = backend
    await bought(b)
    quote = await b.cases.quote_order()(uc.QuoteOrderCommand(USER, "sources/clip.mp4", 1))
    await b.cases.confirm_order()(uc.ConfirmOrderCommand(USER, quote.quote_id, quote.token))
    with pytest.raises(LotNotRefundable):
        await b.cases.refund_payment()(uc.RefundPaymentCommand("ch-1", "control-1", "no"))
    assert await figures(b) == (95, 5, 0, 0, 0)
    assert [tx for tx in b.provider.settled if tx.refund] == []


async def first_order(b: Backend, user: UserId) -> None:
    quote = await b.cases.quote_order()(uc.QuoteOrderCommand(user, f"sources/{user}/clip.mp4", 1))
    await b.cases.confirm_order()(uc.ConfirmOrderCommand(user, quote.quote_id, quote.token))


async def test_a_referral_rewards_both_once_at_the_first_order_and_is_recorded(backend: Backend) -> None:
    b = backend
    await b.cases.grant_coins()(uc.GrantCoinsCommand(USER, LotKind.START, 50, None, LotId("start-42")))
    with pytest.raises(UnknownInviter):
        await b.cases.reward_referral()(FRIEND, UserId(999))
    with pytest.raises(SelfReferral):
        await b.cases.reward_referral()(USER, USER)
    referral = await b.cases.reward_referral()(FRIEND, USER)
    assert (referral.invitee, referral.inviter) == (FRIEND, USER)
    with pytest.raises(AlreadyReferred):
        await b.cases.reward_referral()(FRIEND, USER)
    with pytest.raises(ReferralLoop):
        await b.cases.reward_referral()(USER, FRIEND)
    assert (await figures(b))[0] == 50 and (await figures(b, FRIEND))[0] == 0  # nothing at arrival
    await b.cases.grant_coins()(uc.GrantCoinsCommand(FRIEND, LotKind.START, 50, None, LotId("start-43")))
    await first_order(b, FRIEND)
    await first_order(b, FRIEND)  # a second order settles nothing more
    assert (await figures(b))[0] == 80 and (await figures(b, FRIEND))[0] == 70  # 50 + 30 - two orders of 5
    async with b.new_uow() as uow:
        assert await uow.referrals.inviter_of(FRIEND) == USER
        assert await uow.referrals.inviter_of(USER) is None
        assert await uow.referrals.unsettled(FRIEND) is None
        record = await uow.grants.get(referral.inviter_lot)
        account = await uow.accounts.get(FRIEND)
    assert record is not None and (record.granted_by, record.reason, record.amount) == ("referral", "invited 43", 30)
    assert account is not None
    (lot,) = [lot for lot in account.lots if lot.kind is LotKind.REFERRAL]
    assert lot.expires_at == lot.granted_at + timedelta(days=60)
    assert await screens(b) == ["referral_rewarded"]
    assert await screens(b, FRIEND) == ["referral_invitee_rewarded"]


async def test_an_inviter_is_rewarded_up_to_the_daily_cap_and_again_the_next_day(backend: Backend) -> None:
    b = backend
    caps = b.service.settings().grants.referral_caps  # type: ignore[attr-defined]
    assert caps.per_day is not None
    await b.cases.grant_coins()(uc.GrantCoinsCommand(USER, LotKind.START, 10, None, LotId("start-42")))
    invitees = [UserId(100 + n) for n in range(caps.per_day + 2)]
    for invitee in invitees:
        await b.cases.grant_coins()(uc.GrantCoinsCommand(invitee, LotKind.START, 10, None))
        await b.cases.reward_referral()(invitee, USER)
    for invitee in invitees[:-1]:
        await first_order(b, invitee)
    assert (await figures(b))[0] == 10 + 30 * caps.per_day  # the one past the cap brought nothing
    b.clock.advance(timedelta(days=1, seconds=1))
    await first_order(b, invitees[-1])
    assert (await figures(b))[0] == 10 + 30 * (caps.per_day + 1)
    rewarded = [(await figures(b, invitee))[0] for invitee in invitees]
    assert rewarded == [35] * caps.per_day + [5, 35]


async def test_a_claimed_payment_is_credited_only_when_the_provider_lists_it(backend: Backend) -> None:
    b = backend
    take = b.cases.take_payment()
    b.provider.settled.append(ProviderTransaction("ch-1", USER, 50, "XTR", "buy:50:100"))
    assert await take(uc.CreditPaymentCommand("ch-1", USER, 100, 50, "XTR", "buy:50:100", "edge-1"))
    assert not await take(uc.CreditPaymentCommand("ch-1", USER, 100, 50, "XTR", "buy:50:100", "edge-1"))
    assert not await take(uc.CreditPaymentCommand("made-up", USER, 600, 250, "XTR", "buy:250:600", "edge-2"))
    assert (await figures(b))[0] == 100
    async with b.new_uow() as uow:
        (unconfirmed,) = await uow.claims.unconfirmed()
    assert (unconfirmed.external_id, unconfirmed.node, unconfirmed.user_id) == ("made-up", "edge-2", USER)
    result = await b.cases.reconcile_payments()()
    assert [c.external_id for c in result.unconfirmed] == ["made-up"] and result.needs_attention
    assert await screens(b) == ["coins_credited"]


async def test_a_credited_payment_the_provider_does_not_know_is_reversed_once(backend: Backend) -> None:
    b = backend
    assert await b.cases.credit_payment()(uc.CreditPaymentCommand("made-up", USER, 100, 50, "XTR"))  # no provider
    await first_order(b, USER)  # 5 of its coins set aside
    assert (await b.cases.reconcile_payments()()).reversed == ()  # too recent: the list may lag
    b.clock.advance(timedelta(minutes=11))
    result = await b.cases.reconcile_payments()()
    (reversal,) = result.reversed
    assert (reversal.external_id, reversal.taken, reversal.owed) == ("made-up", 95, 5)
    assert await figures(b) == (0, 5, 0, 0, 95)
    again = await b.cases.reconcile_payments()()
    assert again.reversed == () and again.reversed_before == ("made-up",) and again.unexplained == ()
    async with b.new_uow() as uow:
        assert await uow.payments.get("made-up") is not None  # the money row stays
        (order_id,) = (await uow.accounts.get(USER)).reservations  # type: ignore[union-attr]
    await b.cases.cancel_order()(uc.CancelOrderCommand(USER, order_id))
    assert await figures(b) == (0, 0, 0, 5, 95)  # held coins come back to the ended lot as expired
    assert await screens(b) == ["coins_credited", "payment_reversed", "order_closed"]


async def test_a_list_holding_none_of_our_payments_is_acted_on_only_when_trusted(backend: Backend) -> None:
    """Reconciliation run with another bot's token: that bot's list has none of our payments,
    and its charges are not ours to credit."""
    b = backend
    b.provider.settled.append(ProviderTransaction("other-bot", FRIEND, 50, "XTR", "buy:50:100"))
    for n in range(3):
        assert await b.cases.credit_payment()(uc.CreditPaymentCommand(f"ours-{n}", USER, 100, 50, "XTR"))
    b.clock.advance(timedelta(minutes=11))
    result = await b.cases.reconcile_payments()()
    assert result.foreign and result.needs_attention and result.reversed == () and result.credited == ()
    assert "none of our payments" in result.lines()[0]
    assert (await figures(b))[0] == 300
    async with b.new_uow() as uow:
        assert await uow.accounts.get(FRIEND) is None  # nothing credited to the other bot's customer
    trusted = await b.cases.reconcile_payments()(trust_list=True)
    assert sorted(r.external_id for r in trusted.reversed) == ["ours-0", "ours-1", "ours-2"]
    assert trusted.credited == ("other-bot",)


async def test_a_manual_grant_is_recorded_announced_and_given_once(backend: Backend) -> None:
    b = backend
    grant = uc.GrantCoinsCommand(USER, LotKind.MANUAL, 25, timedelta(days=90), LotId("manual:a-1"), "control-1",
                                 "sorry for the wait")
    assert await b.cases.grant_coins()(grant) == "manual:a-1"
    assert await b.cases.grant_coins()(grant) == "manual:a-1"
    assert (await figures(b))[0] == 25
    async with b.new_uow() as uow:
        record = await uow.grants.get(LotId("manual:a-1"))
    assert record is not None and (record.granted_by, record.reason, record.kind) == (
        "control-1", "sorry for the wait", LotKind.MANUAL,
    )
    assert await screens(b) == ["coins_granted"]


async def test_the_expiry_sweep_takes_every_due_lot_and_tells_each_user(backend: Backend) -> None:
    b = backend
    for user in (USER, FRIEND):
        await b.cases.grant_coins()(uc.GrantCoinsCommand(user, LotKind.START, 10, timedelta(days=1)))
        await b.cases.grant_coins()(uc.GrantCoinsCommand(user, LotKind.MANUAL, 20, None))
    b.clock.advance(timedelta(days=2))
    assert await b.cases.expire_coins()() == 20
    assert await b.cases.expire_coins()() == 0
    assert await figures(b) == (20, 0, 0, 10, 0)
    assert await screens(b, FRIEND) == ["coins_expired"]


async def test_a_grant_named_again_after_its_lot_is_spent_gives_nothing_twice(backend: Backend) -> None:
    """A spent lot (here: expired, nothing available or held) is left out of the account as
    loaded; a grant that names it must still find it, and the balance still counts it."""
    b = backend
    grant = uc.GrantCoinsCommand(USER, LotKind.MANUAL, 10, timedelta(days=1), LotId("manual:spent"))
    assert await b.cases.grant_coins()(grant) == "manual:spent"
    await b.cases.grant_coins()(uc.GrantCoinsCommand(USER, LotKind.START, 20, None, LotId("start-42")))
    b.clock.advance(timedelta(days=2))
    assert await b.cases.expire_coins()() == 10
    assert await b.cases.grant_coins()(grant) == "manual:spent"  # given once, the lot spent or not
    await b.cases.grant_coins().many([grant])
    async with b.new_uow() as uow:
        account = await uow.accounts.get(USER)
        assert account is not None
        got = account.balance(b.clock.now())
    assert (got.granted, got.available, got.expired) == (30, 20, 10) and got.balanced


async def test_a_spent_purchase_is_refused_a_refund_and_its_lot_reversed_takes_nothing(backend: Backend) -> None:
    b = backend
    await bought(b)
    await b.cases.refund_payment()(uc.RefundPaymentCommand("ch-1", "control-1", "bought by mistake"))
    assert await figures(b) == (0, 0, 0, 0, 100)  # the purchase lot is spent: nothing available, all refunded
    with pytest.raises(AlreadyRefunded):
        await b.cases.refund_payment()(uc.RefundPaymentCommand("ch-1", "control-1", "again"))
    assert await figures(b) == (0, 0, 0, 0, 100)


async def test_a_notification_and_reconciliation_crediting_at_once_credit_once(backend: Backend) -> None:
    b = backend
    b.provider.settled.append(ProviderTransaction("ch-7", USER, 100, "XTR", "buy:100:220"))
    notified = b.cases.credit_payment()(uc.CreditPaymentCommand("ch-7", USER, 220, 100, "XTR"))
    answers = await asyncio.gather(notified, b.cases.reconcile_payments()())
    credited = [answers[0], answers[1].credited == ("ch-7",)]
    assert sorted(credited) == [False, True]
    assert (await figures(b))[0] == 220


async def _unconfirmed(b: Backend, count: int) -> None:
    """Until `count` claims are written and wait for the provider (up to 10 s)."""
    for _ in range(1000):
        async with b.new_uow() as uow:
            if len(await uow.claims.unconfirmed()) >= count:
                return
        await asyncio.sleep(0.01)
    raise AssertionError(f"{count} claims never came")


async def test_notices_at_once_share_reads_but_never_one_that_began_before_them(backend: Backend) -> None:
    """A notice whose claim comes while the provider is being read takes the next read: the one
    under way may have looked for claims before this one was written. Every notice that comes
    meanwhile shares that next read. One look each (no waits), so a notice answered from the
    earlier read would stay unconfirmed."""
    b = backend
    take = uc.TakePayment(b.uow, b.clock, b.cases.credit_payment(), b.cases.confirm_payments(), waits=(0.0,))
    listed, go_on = asyncio.Event(), asyncio.Event()
    plain = b.provider.since

    async def first_read_held(position: int) -> object:
        answer = await plain(position)
        if not listed.is_set():
            listed.set()
            await go_on.wait()
        return answer

    b.provider.since = first_read_held  # type: ignore[method-assign]
    b.provider.settled.append(ProviderTransaction("ch-first", USER, 50, "XTR", "buy:50:100"))
    first = asyncio.ensure_future(take(uc.CreditPaymentCommand("ch-first", USER, 100, 50, "XTR", "buy:50:100", "e")))
    await listed.wait()  # the first read has the list, without the charges below
    later_users = [UserId(500 + n) for n in range(6)]
    for user in later_users:
        b.provider.settled.append(ProviderTransaction(f"ch-{user}", user, 50, "XTR", "buy:50:100"))
    later = [
        asyncio.ensure_future(take(uc.CreditPaymentCommand(f"ch-{u}", u, 100, 50, "XTR", "buy:50:100", "e")))
        for u in later_users
    ]
    await _unconfirmed(b, 1 + len(later_users))
    go_on.set()
    assert await first
    assert await asyncio.gather(*later) == [True] * len(later_users)
    assert b.provider.reads == 2
    assert [(await figures(b, u))[0] for u in [USER, *later_users]] == [100] * 7


async def test_a_flood_of_invented_charges_asks_the_provider_a_few_times_not_once_each(backend: Backend) -> None:
    b = backend
    take = b.cases.take_payment()
    invented = [uc.CreditPaymentCommand(f"made-up-{n}", UserId(600 + n), 600, 250, "XTR", "buy:250:600", "edge-2")
                for n in range(20)]
    assert await asyncio.gather(*map(take, invented)) == [False] * 20
    # Each looks three times (at once, then after 0.3 and 1 s): 60 reads if none were shared. The
    # notices' claims are written one after another, so each look of theirs is spread over a few reads.
    assert b.provider.reads <= 30, b.provider.reads
    async with b.new_uow() as uow:
        assert len(await uow.claims.unconfirmed()) == 20
