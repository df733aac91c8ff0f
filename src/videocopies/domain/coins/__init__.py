"""Coins: lots with their own expiry, reservations per order, debits per delivered copy."""

from videocopies.domain.coins.account import Balance, CoinAccount
from videocopies.domain.coins.errors import (
    DebitExceedsReservation,
    InsufficientCoins,
    InvalidAmount,
    LotExists,
    LotNotFound,
    ReservationClosed,
    ReservationExists,
    ReservationNotFound,
)
from videocopies.domain.coins.events import (
    CoinsDebited,
    CoinsExpired,
    CoinsGranted,
    CoinsReleased,
    CoinsReserved,
)
from videocopies.domain.coins.lot import CoinLot, LotKind
from videocopies.domain.coins.reservation import Hold, Reservation

__all__ = [
    "Balance", "CoinAccount", "CoinLot", "CoinsDebited", "CoinsExpired", "CoinsGranted",
    "CoinsReleased", "CoinsReserved", "DebitExceedsReservation", "Hold", "InsufficientCoins",
    "InvalidAmount", "LotExists", "LotKind", "LotNotFound", "Reservation", "ReservationClosed",
    "ReservationExists", "ReservationNotFound",
]
