"""Stateful property of the whole ledger with money coming in and going out: purchases whose
notifications are duplicated, reordered, dropped and late, reconciliation, refunds (with a
provider that is sometimes unreachable), start and referral bonuses, manual grants, orders
setting coins aside, time passing and the expiry sweep. Whatever the sequence, each charge
is credited exactly once, and after a reconciliation our credited total is the provider's."""

from __future__ import annotations

import asyncio
import itertools
from collections import defaultdict
from datetime import timedelta

import attrs
from hypothesis import event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from videocopies.application import use_cases as uc
from videocopies.application.errors import NotFound, ProviderUnavailable
from videocopies.application.ports import BotUser, InboxEvent, PaidInvoice
from videocopies.domain.coins import InsufficientCoins, LotKind, LotNotRefundable
from videocopies.domain.payments import DEFAULT_PACKAGES, AlreadyRefunded, ProviderTransaction, RefundState
from videocopies.domain.shared import LotId, UserId
from videocopies.roles.containers import InMemoryService
from videocopies.settings import Settings

from .test_ledger_stateful import ADVANCE, ExpiredStaysExpired, check_ledger

PACKAGES = DEFAULT_PACKAGES.packages
USERS = (UserId(11), UserId(12))
DELIVERY = st.sampled_from(["once", "once", "twice", "dropped"])


@attrs.define
class Charge:
    charge_id: str
    user_id: UserId
    stars: int
    coins: int
    offer: str


class PaymentsLedgerMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.runner = asyncio.Runner()
        self.service = InMemoryService(settings=Settings(quote_secret=b"property-secret" * 3))
        self.cases = self.service.use_cases
        self.store = self.service.gateways.store()
        self.clock = self.service.gateways.clock()
        self.provider = self.service.gateways.payment_provider()
        self.rules = self.service.settings().grants
        self.charges: dict[str, Charge] = {}
        self.mailbox: list[Charge] = []  # notifications Telegram has yet to deliver, in no particular order
        self.delivered: list[Charge] = []  # notifications delivered at least once (may come again, late)
        self.granted: dict[UserId, int] = defaultdict(int)
        self.people = itertools.count(100)
        self.ids = itertools.count(1)
        self.expired_lots = ExpiredStaysExpired()

    def teardown(self) -> None:
        self.runner.close()

    def run(self, coro):  # type: ignore[no-untyped-def]
        return self.runner.run(coro)

    def tell_bot(self, user_id: UserId, kind: str, **fields: object) -> None:
        event_ = InboxEvent(next(self.ids), BotUser(user_id, "en"), kind, **fields)  # type: ignore[arg-type]

        async def deliver() -> None:
            await self.service.gateways.inbox().add([event_], self.clock.now())
            processor = self.service.bot.inbox_processor()
            while await processor.turn():
                pass

        self.run(deliver())

    @initialize()
    def users_start(self) -> None:
        for user in USERS:
            self.tell_bot(user, "text", text="/start")
            self.granted[user] += self.rules.start_bonus

    # money in

    @rule(user=st.sampled_from(USERS), package=st.integers(0, len(PACKAGES) - 1), delivery=DELIVERY)
    def user_pays(self, user: UserId, package: int, delivery: str) -> None:
        """Telegram settles a charge; its notification arrives once, twice, or never."""
        chosen = PACKAGES[package]
        charge = Charge(f"ch-{next(self.ids)}", user, chosen.stars, chosen.coins, chosen.offer)
        self.charges[charge.charge_id] = charge
        self.provider.settled.append(ProviderTransaction(charge.charge_id, user, charge.stars, "XTR", charge.offer))
        self.mailbox.extend([charge] * {"once": 1, "twice": 2, "dropped": 0}[delivery])
        event(f"notification {delivery}")

    @precondition(lambda self: self.mailbox)
    @rule(n=st.integers(0, 20))
    def notification_arrives(self, n: int) -> None:
        """Any waiting notification, not necessarily the oldest."""
        charge = self.mailbox.pop(n % len(self.mailbox))
        self._notify(charge)

    @precondition(lambda self: self.delivered)
    @rule(n=st.integers(0, 20))
    def late_notification_arrives(self, n: int) -> None:
        self._notify(self.delivered[n % len(self.delivered)])

    def _notify(self, charge: Charge) -> None:
        credited_before = charge.charge_id in self.store.payments
        told_before = self._told_credited(charge)
        known = set(self.store.payments)
        self.tell_bot(charge.user_id, "payment",
                      payment=PaidInvoice(charge.charge_id, charge.stars, "XTR", charge.offer))
        # Asking the provider confirms every claim it lists, earlier ones that waited included.
        for external_id in set(self.store.payments) - known:
            self.granted[self.charges[external_id].user_id] += self.charges[external_id].coins
        if self.provider.unreachable and not credited_before:
            # Only the provider's word credits a notice: it waits for reconciliation.
            assert charge.charge_id not in self.store.payments and self._told_credited(charge) == 0
            event("notification waits for the provider")
            return
        assert charge.charge_id in self.store.payments
        assert self._told_credited(charge) == 1 and (told_before == 1) == credited_before
        event("notification credited" if not credited_before else "notification was a no-op")
        self.delivered.append(charge)

    def _told_credited(self, charge: Charge) -> int:
        return sum(1 for m in self.store.outbox.values() if m.dedup_key == f"paid:{charge.charge_id}")

    @rule()
    def reconcile(self) -> None:
        missing = [c for c in self.charges if c not in self.store.payments]
        result = self.run(self.cases.reconcile_payments()())
        assert sorted(result.credited) == sorted(missing)
        assert result.uncreditable == () and result.report.mismatched == () and result.report.unknown == ()
        for charge_id in missing:
            charge = self.charges[charge_id]
            self.granted[charge.user_id] += charge.coins
        if missing:
            event("reconciliation credited a lost notification")
        # Done when: after reconciliation the credited total is the provider's, once per charge.
        ours = sum(p.paid_amount for p in self.store.payments.values())
        theirs = sum(tx.paid_amount for tx in self.provider.settled if not tx.refund)
        assert ours == theirs and set(self.store.payments) == set(self.charges)
        if not (self.provider.unreachable or self.provider.answers_lost):
            assert not [r for r in self.store.refunds.values() if r.state is RefundState.PENDING]
            refunded_ours = sum(
                self.store.payments[r.external_id].paid_amount for r in self.store.refunds.values()
                if r.state is RefundState.DONE
            )
            refunded_theirs = sum(tx.paid_amount for tx in self.provider.settled if tx.refund)
            assert refunded_ours == refunded_theirs

    # money out

    @precondition(lambda self: self.charges)
    @rule(n=st.integers(0, 20))
    def operator_refunds(self, n: int) -> None:
        charge_id = sorted(self.charges)[n % len(self.charges)]
        earlier = self.store.refunds.get(charge_id)
        account = self.store.accounts[self.charges[charge_id].user_id]
        lot = next((lot for lot in account.lots if lot.lot_id == f"pay:{charge_id}"), None)
        untouched = lot is not None and lot.untouched(self.clock.now())
        command = uc.RefundPaymentCommand(charge_id, "control-1", "property")
        try:
            refund = self.run(self.cases.refund_payment()(command))
        except NotFound:
            assert charge_id not in self.store.payments
            event("refund: not credited yet")
            return
        except AlreadyRefunded:
            assert earlier is not None and earlier.state is RefundState.DONE
            event("refund: already refunded")
            return
        except LotNotRefundable:
            assert not untouched and (earlier is None or earlier.state is not RefundState.PENDING)
            event("refund: coins already used")
            return
        except ProviderUnavailable:
            assert self.provider.unreachable or self.provider.answers_lost
            assert self.store.refunds[charge_id].state is RefundState.PENDING
            event("refund: left pending" + (" (made, answer lost)" if self.provider.answers_lost else ""))
            return
        assert refund.state is RefundState.DONE and not self.provider.unreachable
        assert untouched or (earlier is not None and earlier.state is RefundState.PENDING)
        event("refund: done")

    @rule(mode=st.sampled_from(["up", "down", "answers lost"]))
    def provider_reachability(self, mode: str) -> None:
        """Down: a refund never reaches Telegram. Answers lost: it is made, and we never hear."""
        self.provider.unreachable, self.provider.answers_lost = mode == "down", mode == "answers lost"

    # gifts and spending

    @rule(inviter=st.sampled_from(USERS))
    def friend_joins(self, inviter: UserId) -> None:
        friend = UserId(next(self.people))
        self.tell_bot(friend, "text", text=f"/start ref_{inviter}")
        self.granted[friend] += self.rules.start_bonus  # the referral pays at the friend's first order

    @rule(user=st.sampled_from(USERS), amount=st.integers(1, 300))
    def operator_grants(self, user: UserId, amount: int) -> None:
        lot_id = LotId(f"manual:{next(self.ids)}")
        command = uc.GrantCoinsCommand(user, LotKind.MANUAL, amount, self.rules.valid_for(LotKind.MANUAL), lot_id,
                                       "control-1", "property")
        self.run(self.cases.grant_coins()(command))
        self.granted[user] += amount

    @rule(user=st.sampled_from(USERS), copies=st.sampled_from([1, 5, 10]), cancel=st.booleans())
    def user_orders(self, user: UserId, copies: int, cancel: bool) -> None:
        """Coins set aside for an order (soonest-expiring first), maybe given back by a cancel."""
        quote = self.run(self.cases.quote_order()(uc.QuoteOrderCommand(user, "sources/clip.mp4", copies)))
        try:
            self.run(self.cases.confirm_order()(uc.ConfirmOrderCommand(user, quote.quote_id, quote.token)))
        except InsufficientCoins:
            event("order: not enough coins")
            return
        if cancel:
            self.run(self.cases.cancel_order()(uc.CancelOrderCommand(user, quote.quote_id)))

    @rule(user=st.sampled_from(USERS))
    def user_orders_until_broke(self, user: UserId) -> None:
        """Orders until the coins run out: bought coins (which never expire) are set aside last."""
        for _ in range(40):
            quote = self.run(self.cases.quote_order()(uc.QuoteOrderCommand(user, "sources/clip.mp4", 10)))
            try:
                self.run(self.cases.confirm_order()(uc.ConfirmOrderCommand(user, quote.quote_id, quote.token)))
            except InsufficientCoins:
                return

    @rule(seconds=ADVANCE)
    def time_passes(self, seconds: int) -> None:
        self.clock.advance(timedelta(seconds=seconds * 10))

    @rule()
    def expiry_sweep(self) -> None:
        now = self.clock.now()
        due = sum(lot.available for acc in self.store.accounts.values() for lot in acc.lots if lot.is_expired(now))
        assert self.run(self.cases.expire_coins()()) == due

    # invariants

    @invariant()
    def each_charge_credited_at_most_once(self) -> None:
        purchases = [lot for acc in self.store.accounts.values() for lot in acc.lots if lot.kind is LotKind.PURCHASE]
        assert sorted(lot.lot_id for lot in purchases) == sorted(f"pay:{c}" for c in self.store.payments)
        assert set(self.store.payments) <= set(self.charges)
        for lot in purchases:
            charge = self.charges[lot.lot_id.removeprefix("pay:")]
            assert lot.amount == charge.coins
            assert self.store.accounts[charge.user_id].lot(lot.lot_id) is lot

    @invariant()
    def ledger_balances(self) -> None:
        now = self.clock.now()
        for user, account in self.store.accounts.items():
            check_ledger(account, now)
            self.expired_lots.check(account, now)
            assert account.balance(now).granted == self.granted[user]

    @invariant()
    def refunded_coins_are_refunded_purchases(self) -> None:
        for account in self.store.accounts.values():
            for lot in account.lots:
                if lot.refunded:
                    refund = self.store.refunds[lot.lot_id.removeprefix("pay:")]
                    assert lot.kind is LotKind.PURCHASE and refund.state is not RefundState.REFUSED


TestPaymentsLedger = PaymentsLedgerMachine.TestCase
TestPaymentsLedger.settings = settings(max_examples=150, stateful_step_count=60, deadline=None)
