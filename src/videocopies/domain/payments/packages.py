"""Coin packages sold for Telegram Stars, and the offer an invoice carries."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from videocopies.domain.shared import DomainError

STARS = "XTR"


@attrs.frozen
class CoinPackage:
    stars: int = attrs.field(validator=attrs.validators.gt(0))
    coins: int = attrs.field(validator=attrs.validators.gt(0))

    @property
    def offer(self) -> str:
        """The invoice payload: what was offered, at what price, so the payment credits what
        the user accepted even if the packages change afterwards."""
        return f"buy:{self.stars}:{self.coins}"


@attrs.define
class OfferWithdrawn(DomainError):
    """The invoice's package or price no longer holds."""

    offer: str
    currency: str
    amount: int


def parse_offer(payload: str | None) -> CoinPackage | None:
    parts = (payload or "").split(":")
    if len(parts) != 3 or parts[0] != "buy" or not parts[1].isdigit() or not parts[2].isdigit():
        return None
    stars, coins = int(parts[1]), int(parts[2])
    return CoinPackage(stars, coins) if stars > 0 and coins > 0 else None


@attrs.frozen
class PackageCatalog:
    packages: tuple[CoinPackage, ...]

    @classmethod
    def of(cls, packages: Sequence[CoinPackage]) -> PackageCatalog:
        return cls(tuple(sorted(packages, key=lambda p: p.stars)))

    def by_stars(self, stars: int) -> CoinPackage | None:
        return next((p for p in self.packages if p.stars == stars), None)

    def check(self, payload: str, currency: str, amount: int) -> CoinPackage:
        """Before the user is charged: the offer must still be on sale at that price."""
        offered = parse_offer(payload)
        if currency != STARS or offered is None or offered.stars != amount or offered not in self.packages:
            raise OfferWithdrawn(payload, currency, amount)
        return offered

    def coins_for(self, payload: str | None, amount: int, currency: str) -> int | None:
        """The coins a settled payment buys: the offer it paid for, or (no readable offer)
        the package at that price. None: no package matches, so nothing can be credited."""
        if currency != STARS:
            return None
        offered = parse_offer(payload)
        if offered is not None:
            return offered.coins if offered.stars == amount else None
        package = self.by_stars(amount)
        return package.coins if package else None


DEFAULT_PACKAGES = PackageCatalog.of([CoinPackage(50, 100), CoinPackage(100, 220), CoinPackage(250, 600)])
