"""Stateful properties of the coin ledger: on the CoinAccount aggregate, and through the use cases."""

from __future__ import annotations

import asyncio
import itertools
from collections import defaultdict
from datetime import UTC, datetime, timedelta

import attrs
from hypothesis import event, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    initialize,
    invariant,
    multiple,
    precondition,
    rule,
)

from videocopies.application import use_cases as uc
from videocopies.domain.coins import (
    CoinAccount,
    CoinLot,
    DebitExceedsReservation,
    InsufficientCoins,
    LotExists,
    LotKind,
    ReservationClosed,
    ReservationExists,
)
from videocopies.domain.jobs import CopyArtifact
from videocopies.domain.orders import CopyNotRendered, CopyState, OrderState
from videocopies.domain.payments import (
    Payment,
    PaymentForAnotherAccount,
    PaymentMismatch,
    ProviderTransaction,
    looks_foreign,
)
from videocopies.domain.pricing import QuoteAlreadyUsed, QuoteExpired
from videocopies.domain.shared import DomainError, LotId, OrderId, UserId, WorkerId
from videocopies.roles.containers import InMemoryService
from videocopies.settings import Settings

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
DAY = 86_400
ACCOUNTS = (UserId(1), UserId(2))
KINDS = st.sampled_from(list(LotKind))
# Seconds from now until a lot expires: never, already (0), about to, or some day.
EXPIRY = st.one_of(st.none(), st.sampled_from([0, 1, 30, 3_600]), st.integers(1, 10 * DAY))
ADVANCE = st.sampled_from([1, 29, 31, 60, 600, 3_600, DAY, 3 * DAY])
DEBIT_KEYS = st.sampled_from([f"copy:{i}" for i in range(5)])
PACKAGES = {50: 100, 100: 220, 250: 600}  # stars -> coins, as in the default Settings.packages


# --- checks shared by both machines -------------------------------------------------------


def account_state(account: CoinAccount) -> tuple:
    """Everything a refusal must leave untouched."""
    lots = tuple(
        (lot.lot_id, lot.kind, lot.amount, lot.expires_at, lot.available, lot.debited, lot.expired)
        for lot in account.lots
    )
    reservations = tuple(
        sorted(
            (oid, r.amount, tuple((h.lot_id, h.held) for h in r.holds), r.debited, r.released,
             frozenset(r.debit_keys), r.open)
            for oid, r in account.reservations.items()
        )
    )
    return lots, reservations, account.version


def held_per_lot(account: CoinAccount) -> dict[LotId, int]:
    held: dict[LotId, int] = defaultdict(int)
    for reservation in account.reservations.values():
        for hold in reservation.holds:
            held[hold.lot_id] += hold.held
    return held


def check_ledger(account: CoinAccount, now: datetime) -> None:
    """Every coin is in exactly one place, counted the same way by Balance and by hand."""
    balance = account.balance(now)
    assert balance.balanced, balance
    held = held_per_lot(account)
    granted = available = debited = expired = refunded = 0
    for lot in account.lots:
        assert min(lot.available, lot.debited, lot.expired, lot.refunded) >= 0, lot
        assert lot.amount == lot.available + held[lot.lot_id] + lot.debited + lot.expired + lot.refunded, (
            lot, held[lot.lot_id],
        )
        # A lot is refunded whole or not at all; a reversed one (a payment the provider does not
        # know) gave back what was left of it, and ended then.
        assert lot.refunded in (0, lot.amount) or lot.is_expired(now), lot
        granted += lot.amount
        debited += lot.debited
        refunded += lot.refunded
        if lot.is_expired(now):
            expired += lot.expired + lot.available
        else:
            expired += lot.expired
            available += lot.available
    assert set(held) <= {lot.lot_id for lot in account.lots}
    reserved = 0
    for reservation in account.reservations.values():
        assert all(h.held >= 0 for h in reservation.holds), reservation
        assert min(reservation.debited, reservation.released) >= 0, reservation
        assert reservation.held == reservation.amount - reservation.debited - reservation.released, reservation
        assert reservation.open or reservation.held == 0, reservation
        reserved += reservation.held
    assert (
        balance.granted, balance.available, balance.reserved, balance.debited, balance.expired, balance.refunded,
    ) == (granted, available, reserved, debited, expired, refunded)
    assert granted == available + reserved + debited + expired + refunded


class ExpiredStaysExpired:
    """An expired lot's available coins never grow again: a coin released after its lot
    expired is counted expired."""

    def __init__(self) -> None:
        self.seen: dict[tuple[UserId, LotId], int] = {}

    def check(self, account: CoinAccount, now: datetime) -> None:
        for lot in account.lots:
            if lot.is_expired(now):
                key = (account.account_id, lot.lot_id)
                if key in self.seen:
                    assert lot.available <= self.seen[key], (lot, self.seen[key])
                self.seen[key] = lot.available


# --- the aggregate alone ------------------------------------------------------------------


@attrs.define
class ReservationModel:
    amount: int
    debited: int = 0
    released: int = 0
    keys: set[str] = attrs.Factory(set)
    open: bool = True

    @property
    def held(self) -> int:
        return self.amount - self.debited - self.released


class CoinAccountMachine(RuleBasedStateMachine):
    """Grants, reserves, debits, releases, expiry and payments on two CoinAccounts."""

    reservations = Bundle("reservations")

    def __init__(self) -> None:
        super().__init__()
        self.now = T0
        self.accounts = {a: CoinAccount(a) for a in ACCOUNTS}
        self.granted = dict.fromkeys(ACCOUNTS, 0)
        self.credited: dict[str, int] = {}
        self.model: dict[OrderId, ReservationModel] = {}
        self.ids = itertools.count(1)
        self.expired_lots = ExpiredStaysExpired()

    def _expiry(self, seconds: int | None) -> datetime | None:
        return None if seconds is None else self.now + timedelta(seconds=seconds)

    @rule(account=st.sampled_from(ACCOUNTS), kind=KINDS, amount=st.integers(1, 50), expiry=EXPIRY)
    def grant(self, account: UserId, kind: LotKind, amount: int, expiry: int | None) -> None:
        lot_id = LotId(f"lot-{next(self.ids)}")
        self.accounts[account].grant(lot_id, kind, amount, self.now, self._expiry(expiry))
        self.granted[account] += amount

    @rule(n=st.integers(0, 5), expiry=EXPIRY)
    def credit_payment(self, n: int, expiry: int | None) -> None:
        """Each external id belongs to one account and buys a fixed number of coins."""
        external_id, account = f"tx-{n}", ACCOUNTS[n % 2]
        payment = Payment(external_id, account, 10 * (n + 1), 50, "XTR", self.now)
        before = account_state(self.accounts[account])
        try:
            payment.credit(self.accounts[account], self.now, self._expiry(expiry))
        except LotExists:
            assert external_id in self.credited
            assert account_state(self.accounts[account]) == before
            return
        assert external_id not in self.credited
        self.credited[external_id] = payment.coins
        self.granted[account] += payment.coins

    @rule(n=st.integers(0, 5))
    def credit_payment_to_wrong_account(self, n: int) -> None:
        other = ACCOUNTS[(n + 1) % 2]
        payment = Payment(f"tx-{n}", ACCOUNTS[n % 2], 10 * (n + 1), 50, "XTR", self.now)
        before = account_state(self.accounts[other])
        try:
            payment.credit(self.accounts[other], self.now, None)
            raise AssertionError("a payment was credited to another account")
        except PaymentForAnotherAccount:
            assert account_state(self.accounts[other]) == before

    @rule(target=reservations, account=st.sampled_from(ACCOUNTS), amount=st.integers(1, 40))
    def reserve(self, account: UserId, amount: int):  # type: ignore[no-untyped-def]
        acc = self.accounts[account]
        order_id = OrderId(f"order-{next(self.ids)}")
        usable = sum(lot.available for lot in acc.lots if not lot.is_expired(self.now))
        before = account_state(acc)
        try:
            reservation = acc.reserve(order_id, amount, self.now)
        except InsufficientCoins as refused:
            assert usable < amount and (refused.needed, refused.available) == (amount, usable)
            event("reserve: refused")
            assert account_state(acc) == before
            return multiple()
        assert usable >= amount
        assert reservation.held == amount
        self._check_soonest_first(acc, order_id)
        self.model[order_id] = ReservationModel(amount)
        return (account, order_id)

    def _check_soonest_first(self, acc: CoinAccount, order_id: OrderId) -> None:
        """No usable coin that expires sooner is left behind while a later lot was tapped."""
        def expiry(lot: CoinLot) -> tuple[bool, datetime]:  # never-expiring lots last
            return (lot.expires_at is None, lot.expires_at or datetime.max.replace(tzinfo=UTC))

        lots = {lot.lot_id: lot for lot in acc.lots}
        holds = acc.reservations[order_id].holds
        assert all(not lots[h.lot_id].is_expired(self.now) for h in holds)
        latest = max(expiry(lots[h.lot_id]) for h in holds if h.held)
        for lot in acc.lots:
            if not lot.is_expired(self.now) and lot.available > 0:
                assert expiry(lot) >= latest, (lot, holds)

    @rule(reservation=reservations)
    def reserve_same_order_again(self, reservation: tuple[UserId, OrderId]) -> None:
        account, order_id = reservation
        before = account_state(self.accounts[account])
        try:
            self.accounts[account].reserve(order_id, 1, self.now)
            raise AssertionError("a second reservation for one order was accepted")
        except ReservationExists:
            assert account_state(self.accounts[account]) == before

    @rule(reservation=reservations, amount=st.integers(1, 12), key=DEBIT_KEYS)
    def debit(self, reservation: tuple[UserId, OrderId], amount: int, key: str) -> None:
        account, order_id = reservation
        acc, model = self.accounts[account], self.model[order_id]
        before = account_state(acc)
        try:
            spent = acc.debit(order_id, amount, key)
        except ReservationClosed:
            assert not model.open and key not in model.keys
            assert account_state(acc) == before
            return
        except DebitExceedsReservation:
            event("debit: more than held")
            assert model.open and key not in model.keys and amount > model.held
            assert account_state(acc) == before
            return
        if key in model.keys:
            event("debit: repeated key")
            assert spent == 0 and account_state(acc) == before
            return
        assert model.open and amount <= model.held and spent == amount
        model.debited += amount
        model.keys.add(key)

    @rule(reservation=reservations, amount=st.one_of(st.none(), st.integers(0, 30)))
    def release(self, reservation: tuple[UserId, OrderId], amount: int | None) -> None:
        account, order_id = reservation
        acc, model = self.accounts[account], self.model[order_id]
        before = account_state(acc)
        lots_before = {lot.lot_id: (lot.available, lot.expired) for lot in acc.lots}
        held_before = held_per_lot(acc)
        try:
            returned = acc.release(order_id, self.now, amount)
        except DebitExceedsReservation:
            assert model.open and amount is not None and amount > model.held
            assert account_state(acc) == before
            return
        if not model.open:
            assert returned == 0 and account_state(acc) == before
            return
        want = model.held if amount is None else amount
        assert returned == want
        held_after = held_per_lot(acc)
        for lot in acc.lots:
            back = held_before.get(lot.lot_id, 0) - held_after.get(lot.lot_id, 0)
            assert back >= 0
            available, expired = lots_before[lot.lot_id]
            if lot.is_expired(self.now):
                assert (lot.available, lot.expired) == (available, expired + back), lot
                if back:
                    event("release: coins returned to an expired lot")
            else:
                assert (lot.available, lot.expired) == (available + back, expired), lot
        model.released += want
        model.open = model.held > 0

    @rule(seconds=ADVANCE)
    def advance(self, seconds: int) -> None:
        self.now += timedelta(seconds=seconds)

    @rule(account=st.sampled_from(ACCOUNTS))
    def expire(self, account: UserId) -> None:
        acc = self.accounts[account]
        due = sum(lot.available for lot in acc.lots if lot.is_expired(self.now))
        assert acc.expire(self.now) == due
        assert all(lot.available == 0 for lot in acc.lots if lot.is_expired(self.now))

    @invariant()
    def ledger_balances(self) -> None:
        for account, acc in self.accounts.items():
            check_ledger(acc, self.now)
            self.expired_lots.check(acc, self.now)
            balance = acc.balance(self.now)
            mine = [m for oid, m in self.model.items() if oid in acc.reservations]
            assert len(mine) == len(acc.reservations)
            assert balance.granted == self.granted[account]
            assert balance.debited == sum(m.debited for m in mine)
            assert balance.reserved == sum(m.held for m in mine)
            for order_id, reservation in acc.reservations.items():
                model = self.model[order_id]
                assert (reservation.held, reservation.debited, reservation.released, reservation.open) == (
                    model.held, model.debited, model.released, model.open,
                )
                assert reservation.debit_keys == model.keys

    @invariant()
    def payments_credit_once(self) -> None:
        purchased = sum(
            lot.amount for acc in self.accounts.values() for lot in acc.lots if lot.lot_id.startswith("pay:")
        )
        assert purchased == sum(self.credited.values())


TestCoinAccountStateful = CoinAccountMachine.TestCase
TestCoinAccountStateful.settings = settings(max_examples=500, stateful_step_count=120, deadline=None)


# --- through the use cases on the in-memory service ----------------------------------------


def artifact(order_id: OrderId, index: int) -> CopyArtifact:
    return CopyArtifact(f"copies/{order_id}/{index}.mp4", 1_000 + index, f"{index:064x}")


class LedgerServiceMachine(RuleBasedStateMachine):
    """Orders quoted, confirmed, rendered, delivered, cancelled and failed, grants and payments,
    all through the use cases: the ledger of every account stays whole."""

    quotes = Bundle("quotes")
    orders = Bundle("orders")
    claims = Bundle("claims")

    def __init__(self) -> None:
        super().__init__()
        self.runner = asyncio.Runner()
        self.service = InMemoryService(settings=Settings(quote_secret=b"property-secret" * 3))
        self.cases = self.service.use_cases
        self.store = self.service.gateways.store()
        self.clock = self.service.gateways.clock()
        self.provider = self.service.gateways.payment_provider()
        self.worker = WorkerId("worker-1")
        self.granted: dict[UserId, int] = defaultdict(int)
        self.granted_lots: set[tuple[UserId, LotId]] = set()
        self.credited: dict[str, int] = {}
        self.delivered: set[tuple[OrderId, int]] = set()
        self.expired_lots = ExpiredStaysExpired()

    def teardown(self) -> None:
        self.runner.close()

    def run(self, coro):  # type: ignore[no-untyped-def]
        return self.runner.run(coro)

    def attempt(self, coro, *allowed: type[BaseException]):  # type: ignore[no-untyped-def]
        """Run a use case; a refusal of an allowed kind is returned instead of raised."""
        try:
            return self.run(coro)
        except allowed as refused:
            return refused

    def account_states(self) -> dict[UserId, tuple]:
        return {u: account_state(a) for u, a in self.store.accounts.items()}

    @staticmethod
    def payment_terms(n: int) -> tuple[str, UserId, int]:
        paid = list(PACKAGES)[n % len(PACKAGES)]
        return f"tx-{n}", ACCOUNTS[n % 2], paid

    @initialize(amounts=st.tuples(st.integers(0, 60), st.integers(0, 60)), valid_for=EXPIRY)
    def start_bonus(self, amounts: tuple[int, int], valid_for: int | None) -> None:
        for user, amount in zip(ACCOUNTS, amounts, strict=True):
            if amount:
                self.grant(user, LotKind.START, amount, valid_for, None)

    # coins in

    @rule(
        user=st.sampled_from(ACCOUNTS), kind=KINDS, amount=st.integers(1, 40), valid_for=EXPIRY,
        lot_id=st.one_of(st.none(), st.sampled_from(["bonus-a", "bonus-b"])),
    )
    def grant(self, user: UserId, kind: LotKind, amount: int, valid_for: int | None, lot_id: str | None) -> None:
        ttl = None if valid_for is None else timedelta(seconds=valid_for)
        cmd = uc.GrantCoinsCommand(user, kind, amount, ttl, LotId(lot_id) if lot_id else None)
        before = self.account_states().get(user)
        granted = self.run(self.cases.grant_coins()(cmd))
        if (user, granted) in self.granted_lots:
            assert lot_id is not None and self.account_states()[user] == before
            return
        self.granted_lots.add((user, granted))
        self.granted[user] += amount

    @rule(n=st.integers(0, 5))
    def credit_payment(self, n: int) -> None:
        external_id, user, paid = self.payment_terms(n)
        cmd = uc.CreditPaymentCommand(external_id, user, PACKAGES[paid], paid, "XTR")
        before = self.account_states()
        credited = self.run(self.cases.credit_payment()(cmd))
        assert credited == (external_id not in self.credited)
        if credited:
            self.credited[external_id] = PACKAGES[paid]
            self.granted[user] += PACKAGES[paid]
        else:
            assert self.account_states() == before

    @precondition(lambda self: self.credited)
    @rule(n=st.integers(0, 5))
    def credit_payment_with_other_terms(self, n: int) -> None:
        external_id = sorted(self.credited)[n % len(self.credited)]
        _, user, paid = self.payment_terms(int(external_id.removeprefix("tx-")))
        cmd = uc.CreditPaymentCommand(external_id, user, PACKAGES[paid] + 1, paid, "XTR")
        before = self.account_states()
        refused = self.attempt(self.cases.credit_payment()(cmd), PaymentMismatch)
        assert isinstance(refused, PaymentMismatch) and refused.field == "coins"
        assert self.account_states() == before

    @rule(n=st.integers(0, 6))
    def provider_settles(self, n: int) -> None:
        """The provider lists a transaction (again, possibly); tx-6 matches no coin package."""
        if n == 6:
            self.provider.settled.append(ProviderTransaction("tx-6", ACCOUNTS[0], 77, "XTR"))
            return
        external_id, user, paid = self.payment_terms(n)
        self.provider.settled.append(ProviderTransaction(external_id, user, paid, "XTR"))

    @rule()
    def reconcile(self) -> None:
        listed = list(dict.fromkeys(tx.external_id for tx in self.provider.settled))
        expected = [e for e in listed if e not in self.credited and e != "tx-6"]
        result = self.run(self.cases.reconcile_payments()())
        # A list holding none of our (three or more) payments is taken for another bot's: nothing is done.
        foreign = looks_foreign(len(self.credited), len(set(self.credited) & set(listed)))
        assert result.foreign == foreign
        if foreign:
            assert result.credited == () and result.reversed == ()
            return
        assert list(result.credited) == expected
        assert list(result.uncreditable) == (["tx-6"] if "tx-6" in listed else [])
        assert not result.report.mismatched
        assert {p.external_id for p in result.report.unknown} == set(self.credited) - set(listed)
        for external_id in expected:
            _, user, paid = self.payment_terms(int(external_id.removeprefix("tx-")))
            self.credited[external_id] = PACKAGES[paid]
            self.granted[user] += PACKAGES[paid]

    # orders

    @rule(target=quotes, user=st.sampled_from(ACCOUNTS), copies=st.sampled_from([1, 1, 5, 10]))
    def quote(self, user: UserId, copies: int):  # type: ignore[no-untyped-def]
        return self.run(self.cases.quote_order()(uc.QuoteOrderCommand(user, "sources/clip.mp4", copies)))

    @rule(target=orders, quote=quotes)
    def confirm(self, quote):  # type: ignore[no-untyped-def]
        now, order = self.clock.now(), self.store.orders[quote.quote_id]
        account = self.store.accounts.get(quote.user_id)
        usable = sum(lot.available for lot in account.lots if not lot.is_expired(now)) if account else 0
        before = self.account_states()
        cmd = uc.ConfirmOrderCommand(quote.user_id, quote.quote_id, quote.token)
        outcome = self.attempt(self.cases.confirm_order()(cmd), DomainError)
        event(f"confirm: {'accepted' if isinstance(outcome, str) else type(outcome).__name__}")
        if order.state is not OrderState.QUOTED:
            assert isinstance(outcome, QuoteAlreadyUsed), outcome
        elif now >= quote.expires_at:
            assert isinstance(outcome, QuoteExpired), outcome
        elif usable < quote.total:
            assert isinstance(outcome, InsufficientCoins), outcome
        else:
            assert outcome == quote.quote_id, outcome
            assert self.store.accounts[quote.user_id].reservations[quote.quote_id].held == quote.total
            return quote.quote_id
        assert self.account_states() == before
        return multiple()

    @rule(target=orders, user=st.sampled_from(ACCOUNTS), copies=st.sampled_from([1, 5, 10]))
    def place_order(self, user: UserId, copies: int):  # type: ignore[no-untyped-def]
        """Quote and confirm at once, as a user pressing the button straight away."""
        return self.confirm(self.quote(user, copies))

    @rule(target=claims, render=st.integers(0, 10), finish=st.sampled_from(["complete", "fail", "stop"]))
    def worker_round(self, render: int, finish: str):  # type: ignore[no-untyped-def]
        """Claim, render some copies, then complete, fail or simply stop (and hang)."""
        claimed = self.run(self.cases.claim_job()(uc.ClaimJobCommand(self.worker)))
        for claim in claimed:
            for index, _ in claim.remaining[:render]:
                cmd = uc.CheckpointCopyCommand(
                    claim.job_id, claim.token, index, artifact(claim.order_id, index), self.worker
                )
                self.attempt(self.cases.checkpoint_copy()(cmd), DomainError)
            if finish == "complete":
                self.complete(claim)
            elif finish == "fail":
                self.fail(claim, retryable=render % 2 == 0)
        return multiple(*claimed)

    @rule(mark_sent=st.booleans())
    def deliver_outbox(self, mark_sent: bool) -> None:
        """What edge does: report every ready copy; without marking them sent, the next round
        reports them all again."""
        async def pending():  # type: ignore[no-untyped-def]
            async with self.service.gateways.uow() as uow:
                return await uow.outbox.pending(1_000)

        async def sent(message_id: int) -> None:
            async with self.service.gateways.uow() as uow:
                await uow.outbox.mark_sent(message_id)

        for message_id, message in self.run(pending()):
            if message.kind == "copy_ready":
                self._deliver(message.payload["order_id"], message.payload["index"])
            if mark_sent:
                self.run(sent(message_id))

    @rule(target=claims)
    def claim(self):  # type: ignore[no-untyped-def]
        return multiple(*self.run(self.cases.claim_job()(uc.ClaimJobCommand(self.worker))))

    @rule(claim=claims, n=st.integers(0, 9))
    def checkpoint(self, claim, n: int) -> None:  # type: ignore[no-untyped-def]
        index = n % self.store.jobs[claim.job_id].copies
        cmd = uc.CheckpointCopyCommand(claim.job_id, claim.token, index, artifact(claim.order_id, index), self.worker)
        self.attempt(self.cases.checkpoint_copy()(cmd), DomainError)

    @rule(claim=claims)
    def checkpoint_all(self, claim) -> None:  # type: ignore[no-untyped-def]
        for index, _ in claim.remaining:
            cmd = uc.CheckpointCopyCommand(
                claim.job_id, claim.token, index, artifact(claim.order_id, index), self.worker
            )
            self.attempt(self.cases.checkpoint_copy()(cmd), DomainError)

    @rule(claim=claims)
    def complete(self, claim) -> None:  # type: ignore[no-untyped-def]
        """The receipt id is fixed per lease, so completing the same lease twice is a retry."""
        cmd = uc.CompleteJobCommand(claim.job_id, claim.token, f"complete:{claim.token}", self.worker)
        known = self.store.receipts.get(cmd.receipt_id)
        before = self.account_states()
        result = self.attempt(self.cases.complete_job()(cmd), DomainError)
        if known is not None:
            assert result == dict(known.result) and self.account_states() == before

    @rule(claim=claims, retryable=st.booleans())
    def fail(self, claim, retryable: bool) -> None:  # type: ignore[no-untyped-def]
        cmd = uc.FailJobCommand(
            claim.job_id, claim.token, "ffmpeg crashed", retryable, f"fail:{claim.token}:{retryable}", self.worker
        )
        known = self.store.receipts.get(cmd.receipt_id)
        before = self.account_states()
        result = self.attempt(self.cases.fail_job()(cmd), DomainError)
        if known is not None:
            assert result == dict(known.result) and self.account_states() == before

    @rule(claim=claims)
    def acknowledge_cancel(self, claim) -> None:  # type: ignore[no-untyped-def]
        self.attempt(self.cases.acknowledge_cancel()(claim.job_id, claim.token, self.worker), DomainError)

    @rule()
    def expire_leases(self) -> None:
        self.run(self.cases.expire_leases()())

    @rule(order_id=orders)
    def cancel(self, order_id: OrderId) -> None:
        order = self.store.orders[order_id]
        self.run(self.cases.cancel_order()(uc.CancelOrderCommand(order.user_id, order_id)))

    @rule(order_id=orders, n=st.integers(0, 9), prefer_ready=st.booleans())
    def deliver(self, order_id: OrderId, n: int, prefer_ready: bool) -> None:
        """A delivery report, possibly a duplicate, possibly for a copy not yet rendered."""
        order = self.store.orders[order_id]
        ready = [c.index for c in order.copies if c.state is not CopyState.PENDING]
        index = ready[n % len(ready)] if prefer_ready and ready else n % len(order.copies)
        self._deliver(order_id, index)

    def _deliver(self, order_id: OrderId, index: int) -> None:
        order = self.store.orders[order_id]
        state = order.copies[index].state
        before = self.account_states()
        charged = self.attempt(self.cases.record_delivery()(uc.RecordDeliveryCommand(order_id, index)), DomainError)
        if state is CopyState.PENDING:
            assert isinstance(charged, CopyNotRendered)
        elif state is CopyState.RENDERED:
            assert charged == order.price_per_copy and (order_id, index) not in self.delivered
            event(f"delivery charged on a {order.state.value} order")
            self.delivered.add((order_id, index))
        else:
            assert charged == 0 and self.account_states() == before

    # time

    @rule(seconds=ADVANCE)
    def advance(self, seconds: int) -> None:
        self.clock.advance(timedelta(seconds=seconds))

    @rule()
    def expire_coins(self) -> None:
        now = self.clock.now()
        due = sum(
            lot.available for acc in self.store.accounts.values() for lot in acc.lots if lot.is_expired(now)
        )
        assert self.run(self.cases.expire_coins()()) == due

    # invariants

    @invariant()
    def ledger_balances(self) -> None:
        now = self.clock.now()
        for user, acc in self.store.accounts.items():
            check_ledger(acc, now)
            self.expired_lots.check(acc, now)
            balance = acc.balance(now)
            assert balance.granted == self.granted[user]
            delivered_price = sum(
                self.store.orders[o].price_per_copy for o, _ in self.delivered if self.store.orders[o].user_id == user
            )
            assert balance.debited == delivered_price

    @invariant()
    def orders_charge_what_was_delivered(self) -> None:
        open_orders = {
            o.order_id for o in self.store.orders.values() if o.state is not OrderState.QUOTED and not o.is_final
        }
        assert self.store.slots == open_orders, "a capacity slot is held by exactly each open order"
        for order in self.store.orders.values():
            if order.state is OrderState.QUOTED:
                continue
            reservation = self.store.accounts[order.user_id].reservations[order.order_id]
            delivered = sum(1 for o, _ in self.delivered if o == order.order_id)
            assert order.charged == delivered * order.price_per_copy == reservation.debited
            assert order.charged <= order.total
            if order.is_final:
                assert reservation.held == order.price_per_copy * order.count(CopyState.RENDERED)
            else:
                assert reservation.held == order.total - order.charged

    @invariant()
    def payments_credit_once(self) -> None:
        for order in self.store.orders.values():
            event(f"order {order.state.value}")
        purchased = sum(
            lot.amount for acc in self.store.accounts.values() for lot in acc.lots if lot.lot_id.startswith("pay:")
        )
        assert purchased == sum(self.credited.values())
        assert set(self.store.payments) == set(self.credited)


TestLedgerThroughUseCases = LedgerServiceMachine.TestCase
TestLedgerThroughUseCases.settings = settings(max_examples=500, stateful_step_count=80, deadline=None)
