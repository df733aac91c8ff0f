"""The coin account: lots, reservations, and the rules that move coins between them."""

from __future__ import annotations

from datetime import datetime

import attrs

from videocopies.domain.coins.errors import (
    DebitExceedsReservation,
    InsufficientCoins,
    InvalidAmount,
    LotExists,
    LotNotFound,
    LotNotRefundable,
    ReservationClosed,
    ReservationExists,
    ReservationNotFound,
)
from videocopies.domain.coins.events import (
    CoinsDebited,
    CoinsExpired,
    CoinsGranted,
    CoinsRefunded,
    CoinsReleased,
    CoinsReserved,
)
from videocopies.domain.coins.lot import CoinLot, LotKind
from videocopies.domain.coins.reservation import Hold, Reservation
from videocopies.domain.shared import DomainEvent, LotId, OrderId, UserId


@attrs.frozen
class Balance:
    """Where an account's coins are.
    Always: granted = available + reserved + debited + expired + refunded."""

    granted: int
    available: int
    reserved: int
    debited: int
    expired: int
    refunded: int = 0

    @property
    def balanced(self) -> bool:
        return self.granted == self.available + self.reserved + self.debited + self.expired + self.refunded


@attrs.frozen
class SpentLots:
    """What the lots an account was loaded without add up to: spent lots, with no coin available
    and none held, which no rule changes any more (a refund or a grant names its lot, and loads
    it). Their coins still count in the balance."""

    granted: int = 0
    debited: int = 0
    expired: int = 0
    refunded: int = 0

    def without(self, lot: CoinLot) -> SpentLots:
        return SpentLots(
            self.granted - lot.amount, self.debited - lot.debited, self.expired - lot.expired - lot.available,
            self.refunded - lot.refunded,
        )


@attrs.define(slots=False, eq=False)
class CoinAccount:
    """A user's coins, kept as lots. Orders reserve from the soonest-expiring lots,
    delivered copies are debited from the reservation, and whatever is not delivered
    goes back to the lot it came from with that lot's own expiry.

    `lots` holds at least every lot a rule can change by itself (coins available, or held by
    an open reservation); a store may leave the spent ones out and count them in `spent`."""

    account_id: UserId
    lots: list[CoinLot] = attrs.Factory(list)
    reservations: dict[OrderId, Reservation] = attrs.Factory(dict)
    version: int = 0
    events: list[DomainEvent] = attrs.Factory(list)
    spent: SpentLots = SpentLots()

    def include(self, lot: CoinLot) -> None:
        """A lot the account was loaded without, now loaded: it leaves `spent` for `lots`."""
        if any(known.lot_id == lot.lot_id for known in self.lots):
            raise LotExists(lot.lot_id)
        self.lots.append(lot)
        self.spent = self.spent.without(lot)

    def grant(
        self,
        lot_id: LotId,
        kind: LotKind,
        amount: int,
        now: datetime,
        expires_at: datetime | None,
    ) -> CoinLot:
        _positive(amount)
        if any(lot.lot_id == lot_id for lot in self.lots):
            raise LotExists(lot_id)
        lot = CoinLot.grant(lot_id, kind, amount, now, expires_at)
        self.lots.append(lot)
        self._changed(CoinsGranted(self.account_id, lot_id, amount))
        return lot

    def reserve(self, order_id: OrderId, amount: int, now: datetime) -> Reservation:
        """Hold `amount` for an order, taking the soonest-expiring usable coins first."""
        _positive(amount)
        if order_id in self.reservations:
            raise ReservationExists(order_id)
        usable = sorted((lot for lot in self.lots if lot.usable(now)), key=CoinLot.spend_order)
        if (have := sum(lot.available for lot in usable)) < amount:
            raise InsufficientCoins(self.account_id, needed=amount, available=have)
        reservation = Reservation(order_id, amount)
        left = amount
        for lot in usable:
            take = min(left, lot.available)
            lot.available -= take
            reservation.holds.append(Hold(lot.lot_id, take))
            left -= take
            if left == 0:
                break
        self.reservations[order_id] = reservation
        self._changed(CoinsReserved(self.account_id, order_id, amount))
        return reservation

    def debit(self, order_id: OrderId, amount: int, key: str) -> int:
        """Spend `amount` of an order's reservation once per `key` (e.g. one delivered copy).
        A repeated key spends nothing and returns 0."""
        _positive(amount)
        reservation = self._reservation(order_id)
        if key in reservation.debit_keys:
            return 0
        if not reservation.open:
            raise ReservationClosed(order_id)
        if amount > reservation.held:
            raise DebitExceedsReservation(order_id, requested=amount, held=reservation.held)
        left = amount
        for hold in reservation.holds:
            take = min(left, hold.held)
            hold.held -= take
            self._lot(hold.lot_id).debited += take
            left -= take
            if left == 0:
                break
        reservation.debited += amount
        reservation.debit_keys.add(key)
        self._changed(CoinsDebited(self.account_id, order_id, amount, key))
        return amount

    def release(self, order_id: OrderId, now: datetime, amount: int | None = None) -> int:
        """Return held coins to their original lots. A lot that expired meanwhile gets
        them back as expired: a cancel never extends a coin's life. A partial release
        returns the latest-expiring holds, keeping the soonest for the debits still due."""
        reservation = self._reservation(order_id)
        if not reservation.open:
            return 0
        want = reservation.held if amount is None else amount
        if want < 0 or want > reservation.held:
            raise DebitExceedsReservation(order_id, requested=want, held=reservation.held)
        returned = expired = 0
        left = want
        for hold in reversed(reservation.holds):
            give = min(left, hold.held)
            if give == 0:
                continue
            hold.held -= give
            lot = self._lot(hold.lot_id)
            if lot.is_expired(now):
                lot.expired += give
                expired += give
            else:
                lot.available += give
                returned += give
            left -= give
        reservation.released += want
        closing = reservation.held == 0
        if closing:
            reservation.open = False
        if want:
            self._changed(CoinsReleased(self.account_id, order_id, returned, expired))
        elif closing:
            self._changed(CoinsReleased(self.account_id, order_id, 0, 0))
        return want

    def expire(self, now: datetime) -> int:
        """Move every available coin of an expired lot to expired."""
        total = 0
        for lot in self.lots:
            if lot.is_expired(now) and lot.available:
                amount, lot.available = lot.available, 0
                lot.expired += amount
                total += amount
                self._changed(CoinsExpired(self.account_id, lot.lot_id, amount))
        return total

    def refund(self, lot_id: LotId, now: datetime) -> int:
        """Give back a whole lot (a refunded purchase): allowed only while every one of its
        coins is still available; they leave the account as refunded."""
        lot = self._lot(lot_id)
        if not lot.untouched(now):
            raise LotNotRefundable(lot_id, lot.amount, lot.available if not lot.is_expired(now) else 0)
        lot.available, lot.refunded = 0, lot.amount
        self._changed(CoinsRefunded(self.account_id, lot_id, lot.amount))
        return lot.amount

    def undo_refund(self, lot_id: LotId, now: datetime) -> int:
        """The provider refused the refund: the lot's coins come back as they were (as
        expired, if the lot's time ran out meanwhile)."""
        lot = self._lot(lot_id)
        back, lot.refunded = lot.refunded, 0
        if lot.is_expired(now):
            lot.expired += back
        else:
            lot.available += back
        if back:
            self._changed(CoinsGranted(self.account_id, lot_id, back))
        return back

    def take_back(self, lot_id: LotId, now: datetime) -> int:
        """A lot that should never have been granted (a payment the provider does not know):
        its available coins leave the account (counted with the refunded), and the lot ends now,
        so coins an order still holds come back to it as expired, never spendable again.
        Returns the coins taken; what was spent or is held stays as it is."""
        lot = self._lot(lot_id)
        taken = lot.available if not lot.is_expired(now) else 0
        lot.available -= taken
        lot.refunded += taken
        if lot.expires_at is None or lot.expires_at > now:
            lot.expires_at = now
        self._changed(CoinsRefunded(self.account_id, lot_id, taken))
        return taken

    def balance(self, now: datetime) -> Balance:
        """The account as the user sees it at `now`; coins of a lot past its expiry count
        as expired even before the sweep moves them."""
        spent = self.spent
        granted, debited, expired, refunded = spent.granted, spent.debited, spent.expired, spent.refunded
        available = 0
        for lot in self.lots:
            granted += lot.amount
            debited += lot.debited
            expired += lot.expired
            refunded += lot.refunded
            if lot.is_expired(now):
                expired += lot.available
            else:
                available += lot.available
        reserved = sum(r.held for r in self.reservations.values())
        return Balance(granted, available, reserved, debited, expired, refunded)

    def reservation(self, order_id: OrderId) -> Reservation | None:
        return self.reservations.get(order_id)

    def lot(self, lot_id: LotId) -> CoinLot:
        return self._lot(lot_id)

    def _reservation(self, order_id: OrderId) -> Reservation:
        try:
            return self.reservations[order_id]
        except KeyError:
            raise ReservationNotFound(order_id) from None

    def _lot(self, lot_id: LotId) -> CoinLot:
        for lot in self.lots:
            if lot.lot_id == lot_id:
                return lot
        raise LotNotFound(lot_id)

    def _changed(self, event: DomainEvent) -> None:
        # Bumped on every change, child rows included, so the store's optimistic check sees it.
        self.version += 1
        self.events.append(event)


def _positive(amount: int) -> None:
    if not isinstance(amount, int) or isinstance(amount, bool) or amount <= 0:
        raise InvalidAmount(amount)
