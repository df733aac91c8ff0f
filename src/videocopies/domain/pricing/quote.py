"""A quote: a signed, expiring, single-use offer to make copies at a fixed price."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import attrs

from videocopies.domain.pricing.keys import QuoteKeys
from videocopies.domain.pricing.tariff import PricingPolicy, Tariff
from videocopies.domain.shared import DomainError, OrderId, UserId

_MAC_BYTES = 16


@attrs.define
class QuoteForged(DomainError):
    quote_id: OrderId


@attrs.define
class QuoteExpired(DomainError):
    quote_id: OrderId
    expired_at: datetime


@attrs.define
class TariffRetired(DomainError):
    quote_id: OrderId
    tariff_version: int


@attrs.define
class QuoteNotYours(DomainError):
    quote_id: OrderId
    user_id: UserId


@attrs.define
class QuoteAlreadyUsed(DomainError):
    quote_id: OrderId


@attrs.frozen
class Quote:
    """Order parameters, price, tariff version and expiry, bound together by a MAC.
    A stale or forged quote cannot order at another price."""

    quote_id: OrderId
    user_id: UserId
    source_key: str
    copies: int
    price_per_copy: int
    total: int
    tariff_version: int
    expires_at: datetime
    token: str
    source_bytes: int = 0  # the source's size, so a worker can tell whether the job fits its disk

    @classmethod
    def issue(
        cls,
        quote_id: OrderId,
        user_id: UserId,
        source_key: str,
        copies: int,
        tariff: Tariff,
        now: datetime,
        ttl: timedelta,
        keys: QuoteKeys,
        source_bytes: int = 0,
    ) -> Quote:
        price = tariff.price_per_copy(copies)
        unsigned = cls(
            quote_id, user_id, source_key, copies, price, copies * price,
            tariff.version, now + ttl, token="", source_bytes=source_bytes,
        )
        return unsigned.signed(keys)

    def signed(self, keys: QuoteKeys) -> Quote:
        """This quote with its token made by the current key."""
        return attrs.evolve(self, token=keys.sign(self.signed_message(), _MAC_BYTES))

    def signed_message(self) -> bytes:
        """Every field the token signs (a 128-bit HMAC-SHA256, named by the key's id)."""
        return "|".join(
            (
                "quote-v1", self.quote_id, str(self.user_id), self.source_key, str(self.copies),
                str(self.price_per_copy), str(self.total), str(self.tariff_version),
                # The instant, not its rendering: a timestamp read back in another zone still verifies.
                self.expires_at.astimezone(UTC).isoformat(),
                str(self.source_bytes),
            )
        ).encode()

    def terms(self) -> tuple[object, ...]:
        """Everything the quote binds, without the token that signs it."""
        return (
            self.quote_id, self.user_id, self.source_key, self.copies, self.price_per_copy, self.total,
            self.tariff_version, self.expires_at, self.source_bytes,
        )

    def verify(self, keys: QuoteKeys, now: datetime, policy: PricingPolicy, user_id: UserId) -> None:
        """Refuse a quote that was altered, is someone else's, is past its expiry,
        or was priced on a tariff no longer honoured."""
        self.authenticate(keys, user_id)
        self.check_terms(now, policy)

    def authenticate(self, keys: QuoteKeys, user_id: UserId) -> None:
        if not keys.verify(self.token, self.signed_message(), _MAC_BYTES):
            raise QuoteForged(self.quote_id)
        if self.total != self.copies * self.price_per_copy:
            raise QuoteForged(self.quote_id)
        if user_id != self.user_id:
            raise QuoteNotYours(self.quote_id, user_id)

    def check_terms(self, now: datetime, policy: PricingPolicy) -> None:
        if now >= self.expires_at:
            raise QuoteExpired(self.quote_id, self.expires_at)
        if not policy.accepts(self.tariff_version):
            raise TariffRetired(self.quote_id, self.tariff_version)
