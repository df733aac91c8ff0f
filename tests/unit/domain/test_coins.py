"""The coin account: soonest-expiring coins are spent first, a copy is debited once, and
whatever is not delivered goes back to the lot it came from, with that lot's own expiry."""

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from videocopies.domain.coins import (
    CoinAccount,
    CoinsExpired,
    CoinsReleased,
    DebitExceedsReservation,
    InsufficientCoins,
    InvalidAmount,
    LotExists,
    LotKind,
    ReservationClosed,
    ReservationExists,
    ReservationNotFound,
)
from videocopies.domain.shared import LotId, OrderId, UserId

T0 = datetime(2026, 1, 1, 12, tzinfo=UTC)
DAY = timedelta(days=1)
WEEK = timedelta(days=7)
ORDER = OrderId("order-1")
OTHER_ORDER = OrderId("order-2")


def account_with(*lots: tuple[str, int, timedelta | None]) -> CoinAccount:
    """An account holding the given lots, all granted at T0: (lot id, amount, valid for)."""
    account = CoinAccount(UserId(7))
    for lot_id, amount, valid_for in lots:
        account.grant(LotId(lot_id), LotKind.START, amount, T0, None if valid_for is None else T0 + valid_for)
    return account


def holds(account: CoinAccount, order_id: OrderId = ORDER) -> list[tuple[str, int]]:
    reservation = account.reservation(order_id)
    assert reservation is not None
    return [(h.lot_id, h.held) for h in reservation.holds]


def available(account: CoinAccount) -> dict[str, int]:
    return {lot.lot_id: lot.available for lot in account.lots}


def snapshot(account: CoinAccount) -> tuple:
    """Everything a refused action must leave as it was."""
    return (
        account.version,
        len(account.events),
        [(lot.lot_id, lot.available, lot.debited, lot.expired) for lot in account.lots],
        {
            oid: (r.held, r.debited, r.released, r.open, sorted(r.debit_keys), [(h.lot_id, h.held) for h in r.holds])
            for oid, r in account.reservations.items()
        },
    )


# --- reserving ----------------------------------------------------------------------------


def test_reserve_takes_the_soonest_expiring_lots_first_and_never_expiring_last():
    account = account_with(("forever", 10, None), ("week", 10, WEEK), ("day", 10, DAY))

    account.reserve(ORDER, 25, T0)

    assert holds(account) == [("day", 10), ("week", 10), ("forever", 5)]
    assert available(account) == {"forever": 5, "week": 0, "day": 0}
    assert account.balance(T0).reserved == 25


def test_reserve_takes_only_what_it_needs_from_the_soonest_lot():
    account = account_with(("week", 10, WEEK), ("day", 10, DAY))

    account.reserve(ORDER, 4, T0)

    assert holds(account) == [("day", 4)]
    assert available(account) == {"week": 10, "day": 6}


def test_lots_expiring_together_are_spent_oldest_grant_first():
    account = CoinAccount(UserId(7))
    account.grant(LotId("newer"), LotKind.MANUAL, 5, T0 + DAY, T0 + WEEK)
    account.grant(LotId("older"), LotKind.START, 5, T0, T0 + WEEK)

    account.reserve(ORDER, 7, T0 + DAY)

    assert holds(account) == [("older", 5), ("newer", 2)]


@pytest.mark.parametrize("now", [T0 + DAY, T0 + 2 * DAY], ids=["exactly-at-expiry", "after-expiry"])
def test_reserve_skips_expired_lots(now):
    account = account_with(("day", 10, DAY), ("week", 10, WEEK))

    account.reserve(ORDER, 5, now)

    assert holds(account) == [("week", 5)]
    assert available(account) == {"day": 10, "week": 5}


def test_reserve_refuses_when_usable_coins_fall_short_and_names_the_shortfall():
    account = account_with(("day", 10, DAY), ("week", 5, WEEK))
    before = snapshot(account)

    with pytest.raises(InsufficientCoins) as refused:
        account.reserve(ORDER, 7, T0 + 2 * DAY)  # the 10-coin lot has expired

    assert (refused.value.needed, refused.value.available, refused.value.short_by) == (7, 5, 2)
    assert refused.value.account_id == UserId(7)
    assert snapshot(account) == before
    assert account.reservation(ORDER) is None


def test_an_order_reserves_only_once():
    account = account_with(("day", 10, DAY))
    account.reserve(ORDER, 4, T0)
    before = snapshot(account)

    with pytest.raises(ReservationExists):
        account.reserve(ORDER, 4, T0)

    assert snapshot(account) == before


# --- debiting -----------------------------------------------------------------------------


def test_debit_spends_a_key_once():
    account = account_with(("day", 20, DAY))
    account.reserve(ORDER, 12, T0)

    first = account.debit(ORDER, 4, key="copy:0")
    repeat = account.debit(ORDER, 4, key="copy:0")
    other = account.debit(ORDER, 4, key="copy:1")

    assert (first, repeat, other) == (4, 0, 4)
    balance = account.balance(T0)
    assert (balance.available, balance.reserved, balance.debited) == (8, 4, 8)
    assert balance.balanced


def test_debit_consumes_the_soonest_expiring_holds_first():
    account = account_with(("week", 10, WEEK), ("day", 5, DAY))
    account.reserve(ORDER, 12, T0)

    account.debit(ORDER, 8, key="copy:0")

    assert holds(account) == [("day", 0), ("week", 4)]
    assert {lot.lot_id: lot.debited for lot in account.lots} == {"week": 3, "day": 5}


def test_debit_beyond_what_is_held_is_refused():
    account = account_with(("day", 10, DAY))
    account.reserve(ORDER, 8, T0)
    account.debit(ORDER, 4, key="copy:0")
    before = snapshot(account)

    with pytest.raises(DebitExceedsReservation) as refused:
        account.debit(ORDER, 5, key="copy:1")

    assert (refused.value.requested, refused.value.held) == (5, 4)
    assert snapshot(account) == before


def test_debit_needs_a_reservation():
    account = account_with(("day", 10, DAY))

    with pytest.raises(ReservationNotFound):
        account.debit(ORDER, 4, key="copy:0")


def test_a_released_reservation_takes_no_new_debit_but_answers_a_repeat_with_zero():
    account = account_with(("day", 10, DAY))
    account.reserve(ORDER, 8, T0)
    account.debit(ORDER, 4, key="copy:0")
    account.release(ORDER, T0)

    assert account.debit(ORDER, 4, key="copy:0") == 0
    with pytest.raises(ReservationClosed):
        account.debit(ORDER, 4, key="copy:1")


# --- releasing ----------------------------------------------------------------------------


def test_partial_release_returns_the_latest_expiring_holds_first():
    account = account_with(("day", 5, DAY), ("week", 5, WEEK), ("forever", 5, None))
    account.reserve(ORDER, 15, T0)

    released = account.release(ORDER, T0, amount=7)

    assert released == 7
    assert holds(account) == [("day", 5), ("week", 3), ("forever", 0)]
    assert available(account) == {"day": 0, "week": 2, "forever": 5}
    reservation = account.reservation(ORDER)
    assert reservation is not None and reservation.open


def test_full_release_returns_every_held_coin_to_its_own_lot():
    account = account_with(("day", 5, DAY), ("week", 10, WEEK))
    account.reserve(ORDER, 12, T0)
    account.debit(ORDER, 4, key="copy:0")

    released = account.release(ORDER, T0)

    assert released == 8
    assert available(account) == {"day": 1, "week": 10}
    reservation = account.reservation(ORDER)
    assert reservation is not None and not reservation.open and reservation.held == 0
    balance = account.balance(T0)
    assert (balance.available, balance.reserved, balance.debited) == (11, 0, 4)
    assert account.release(ORDER, T0) == 0


def test_release_of_more_than_is_held_is_refused():
    account = account_with(("day", 10, DAY))
    account.reserve(ORDER, 8, T0)
    before = snapshot(account)

    with pytest.raises(DebitExceedsReservation):
        account.release(ORDER, T0, amount=9)

    assert snapshot(account) == before


def test_coins_released_into_a_lot_that_expired_meanwhile_count_as_expired():
    account = account_with(("day", 10, DAY), ("forever", 10, None))
    account.reserve(ORDER, 15, T0)

    account.release(ORDER, T0 + 2 * DAY)

    day, forever = account.lot(LotId("day")), account.lot(LotId("forever"))
    assert (day.available, day.expired) == (0, 10)
    assert (forever.available, forever.expired) == (10, 0)
    assert account.events[-1] == CoinsReleased(UserId(7), ORDER, returned=5, expired=10)
    balance = account.balance(T0 + 2 * DAY)
    assert (balance.available, balance.reserved, balance.expired) == (10, 0, 10)
    assert balance.balanced


# --- expiry -------------------------------------------------------------------------------


def test_the_sweep_expires_what_is_left_of_expired_lots_and_leaves_reservations_alone():
    account = account_with(("day", 10, DAY), ("forever", 10, None))
    account.reserve(ORDER, 4, T0)

    assert account.expire(T0 + DAY - timedelta(seconds=1)) == 0
    swept = account.expire(T0 + DAY)

    assert swept == 6
    day = account.lot(LotId("day"))
    assert (day.available, day.expired) == (0, 6)
    assert holds(account) == [("day", 4)]
    assert account.events[-1] == CoinsExpired(UserId(7), LotId("day"), 6)
    assert account.expire(T0 + 2 * DAY) == 0


def test_balance_counts_an_expired_lot_as_expired_before_the_sweep_moves_it():
    account = account_with(("day", 10, DAY), ("forever", 3, None))
    later = T0 + 2 * DAY

    before_sweep = account.balance(later)
    account.expire(later)
    after_sweep = account.balance(later)

    assert (before_sweep.available, before_sweep.expired, before_sweep.granted) == (3, 10, 13)
    assert before_sweep == after_sweep
    assert before_sweep.balanced


# --- refusals and bookkeeping -------------------------------------------------------------


@pytest.mark.parametrize("amount", [0, -1, True, False, 1.5, "3"])
def test_invalid_amounts_are_refused(amount):
    account = account_with(("day", 10, DAY))
    account.reserve(ORDER, 4, T0)
    before = snapshot(account)

    with pytest.raises(InvalidAmount):
        account.grant(LotId("new"), LotKind.MANUAL, amount, T0, None)
    with pytest.raises(InvalidAmount):
        account.reserve(OTHER_ORDER, amount, T0)
    with pytest.raises(InvalidAmount):
        account.debit(ORDER, amount, key="copy:0")

    assert snapshot(account) == before


def test_a_lot_id_is_granted_once():
    account = account_with(("day", 10, DAY))
    before = snapshot(account)

    with pytest.raises(LotExists) as refused:
        account.grant(LotId("day"), LotKind.MANUAL, 99, T0, None)

    assert refused.value.lot_id == "day"
    assert snapshot(account) == before


def test_version_bumps_on_every_change_and_only_then():
    account = CoinAccount(UserId(7))
    versions = [account.version]

    def step(action):
        action()
        versions.append(account.version)

    step(lambda: account.grant(LotId("day"), LotKind.START, 10, T0, T0 + DAY))
    step(lambda: account.reserve(ORDER, 8, T0))
    step(lambda: account.debit(ORDER, 4, key="copy:0"))
    step(lambda: account.debit(ORDER, 4, key="copy:0"))  # repeat: no change
    step(lambda: account.release(ORDER, T0, amount=2))
    step(lambda: account.expire(T0 + DAY))
    step(lambda: account.expire(T0 + DAY))  # nothing left to expire
    step(lambda: account.release(ORDER, T0 + DAY))

    assert versions == [0, 1, 2, 3, 3, 4, 5, 5, 6]


# --- the ledger always balances -----------------------------------------------------------

operations = st.lists(
    st.tuples(
        st.sampled_from(["grant", "reserve", "debit", "release", "expire"]),
        st.integers(min_value=1, max_value=30),  # amount
        st.integers(min_value=0, max_value=3),  # order
        st.integers(min_value=0, max_value=10),  # days since T0
    ),
    max_size=30,
)


@given(operations)
def test_every_coin_is_in_exactly_one_place_whatever_happens(ops):
    account = CoinAccount(UserId(7))
    for n, (op, amount, order, days) in enumerate(ops):
        now, order_id = T0 + timedelta(days=days), OrderId(f"order-{order}")
        try:
            if op == "grant":
                account.grant(LotId(f"lot-{n}"), LotKind.MANUAL, amount, now, now + timedelta(days=amount % 4 + 1))
            elif op == "reserve":
                account.reserve(order_id, amount, now)
            elif op == "debit":
                account.debit(order_id, amount, key=f"k{n}")
            elif op == "release":
                account.release(order_id, now, None if amount % 2 else amount)
            else:
                account.expire(now)
        except (InsufficientCoins, ReservationExists, ReservationNotFound, ReservationClosed,
                DebitExceedsReservation):
            pass
        balance = account.balance(now)
        assert balance.balanced
        assert min(balance.available, balance.reserved, balance.debited, balance.expired) >= 0
        for lot in account.lots:
            held = sum(h.held for r in account.reservations.values() for h in r.holds if h.lot_id == lot.lot_id)
            assert lot.amount == lot.available + held + lot.debited + lot.expired


def test_closing_a_fully_debited_reservation_is_a_change_too():
    account = account_with(("day", 10, DAY))
    account.reserve(ORDER, 8, T0)
    account.debit(ORDER, 4, key="copy:0")
    account.debit(ORDER, 4, key="copy:1")
    version = account.version

    account.release(ORDER, T0)

    reservation = account.reservation(ORDER)
    assert reservation is not None and not reservation.open
    assert account.version == version + 1


# --- spent lots left out of a loaded account ---------------------------------------------------


def test_spent_lots_left_out_still_count_and_a_lot_brought_back_moves_out_of_them():
    from videocopies.domain.coins import CoinLot, SpentLots

    spent_lot = CoinLot(LotId("old"), LotKind.PURCHASE, 10, T0 - WEEK, T0 - DAY, available=0, debited=6, expired=3,
                        refunded=1)
    account = account_with(("new", 20, WEEK))
    account.spent = SpentLots(granted=10, debited=6, expired=3, refunded=1)  # as a store loads it
    whole = account.balance(T0)
    assert (whole.granted, whole.available, whole.debited, whole.expired, whole.refunded) == (30, 20, 6, 3, 1)
    assert whole.balanced
    version = account.version
    account.include(spent_lot)
    assert account.spent == SpentLots() and account.balance(T0) == whole
    assert account.version == version  # loading more of the account changes nothing in it
    with pytest.raises(LotExists):
        account.include(spent_lot)
