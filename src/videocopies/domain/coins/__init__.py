"""Coins: lots with their own expiry, reservations per order, debits per delivered copy."""

from videocopies.domain.coins.account import Balance, CoinAccount, SpentLots
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
from videocopies.domain.coins.grants import (
    AlreadyReferred,
    GrantRules,
    InviterRewards,
    Referral,
    ReferralCaps,
    ReferralLoop,
    ReferralOutcome,
    ReferralSettled,
    SelfReferral,
    UnknownInviter,
    parse_invite,
)
from videocopies.domain.coins.lot import CoinLot, LotKind
from videocopies.domain.coins.reservation import Hold, Reservation

__all__ = [
    "AlreadyReferred", "Balance", "CoinAccount", "CoinLot", "CoinsDebited", "CoinsExpired", "CoinsGranted",
    "CoinsRefunded", "CoinsReleased", "CoinsReserved", "DebitExceedsReservation", "GrantRules", "Hold",
    "InsufficientCoins", "InvalidAmount", "InviterRewards", "LotExists", "LotKind", "LotNotFound", "LotNotRefundable",
    "Referral", "ReferralCaps", "ReferralLoop", "ReferralOutcome", "ReferralSettled", "Reservation",
    "ReservationClosed", "ReservationExists", "ReservationNotFound", "SelfReferral", "SpentLots", "UnknownInviter",
    "parse_invite",
]
