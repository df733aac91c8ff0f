"""A quote: a signed, expiring, single-use offer to make copies at a fixed price."""

from __future__ import annotations

import base64
import hmac
from datetime import UTC, datetime, timedelta

import attrs

from videocopies.domain.pricing.tariff import PricingPolicy, Tariff
from videocopies.domain.shared import DomainError, OrderId, UserId


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
        secret: bytes,
        source_bytes: int = 0,
    ) -> Quote:
        price = tariff.price_per_copy(copies)
        unsigned = cls(
            quote_id, user_id, source_key, copies, price, copies * price,
            tariff.version, now + ttl, token="", source_bytes=source_bytes,
        )
        return attrs.evolve(unsigned, token=unsigned.signature(secret))

    def signature(self, secret: bytes) -> str:
        """A 128-bit HMAC-SHA256 of every field, URL-safe so it fits in a button."""
        message = "|".join(
            (
                "quote-v1", self.quote_id, str(self.user_id), self.source_key, str(self.copies),
                str(self.price_per_copy), str(self.total), str(self.tariff_version),
                # The instant, not its rendering: a timestamp read back in another zone still verifies.
                self.expires_at.astimezone(UTC).isoformat(),
                str(self.source_bytes),
            )
        ).encode()
        digest = hmac.digest(secret, message, "sha256")[:16]
        return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()

    def terms(self) -> tuple[object, ...]:
        """Everything the quote binds, without the token that signs it."""
        return (
            self.quote_id, self.user_id, self.source_key, self.copies, self.price_per_copy, self.total,
            self.tariff_version, self.expires_at, self.source_bytes,
        )

    def verify(self, secret: bytes, now: datetime, policy: PricingPolicy, user_id: UserId) -> None:
        """Refuse a quote that was altered, is someone else's, is past its expiry,
        or was priced on a tariff no longer honoured."""
        self.authenticate(secret, user_id)
        self.check_terms(now, policy)

    def authenticate(self, secret: bytes, user_id: UserId) -> None:
        if not hmac.compare_digest(self.token, self.signature(secret)):
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
