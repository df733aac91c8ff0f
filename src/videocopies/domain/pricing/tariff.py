"""Versioned tariffs: the price per copy for each offered number of copies."""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from videocopies.domain.shared import DomainError


@attrs.define
class UnsupportedCopyCount(DomainError):
    copies: int
    offered: tuple[int, ...]


@attrs.define
class InvalidTariff(DomainError):
    reason: str


def _frozen_prices(prices: Mapping[int, int] | tuple[tuple[int, int], ...]) -> tuple[tuple[int, int], ...]:
    pairs = tuple(sorted(dict(prices).items()))
    if not pairs:
        raise InvalidTariff("a tariff offers at least one number of copies")
    for copies, price in pairs:
        if isinstance(copies, bool) or not isinstance(copies, int) or copies < 1:
            raise InvalidTariff(f"copies must be a positive integer, got {copies!r}")
        if isinstance(price, bool) or not isinstance(price, int) or price < 1:
            raise InvalidTariff(f"price per copy must be a positive integer, got {price!r}")
    return pairs


@attrs.frozen
class Tariff:
    """What one copy costs, by how many copies are ordered at once."""

    version: int
    per_copy: tuple[tuple[int, int], ...] = attrs.field(converter=_frozen_prices)

    @property
    def offered(self) -> tuple[int, ...]:
        return tuple(copies for copies, _ in self.per_copy)

    def price_per_copy(self, copies: int) -> int:
        for offered, price in self.per_copy:
            if offered == copies:
                return price
        raise UnsupportedCopyCount(copies, self.offered)

    def total(self, copies: int) -> int:
        return copies * self.price_per_copy(copies)


@attrs.frozen
class PricingPolicy:
    """The tariff quotes are issued on, and the versions a confirmation still honours."""

    current: Tariff
    also_accepted: frozenset[int] = attrs.field(default=frozenset(), converter=frozenset)

    @property
    def accepted_versions(self) -> frozenset[int]:
        return self.also_accepted | {self.current.version}

    def accepts(self, version: int) -> bool:
        return version in self.accepted_versions
