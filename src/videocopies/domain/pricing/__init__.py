"""Pricing: versioned tariffs and signed, expiring, single-use quotes."""

from videocopies.domain.pricing.keys import MIN_SECRET_BYTES, QuoteKey, QuoteKeys, QuoteKeysClash, QuoteKeyTooShort
from videocopies.domain.pricing.quote import (
    Quote,
    QuoteAlreadyUsed,
    QuoteExpired,
    QuoteForged,
    QuoteNotYours,
    TariffRetired,
)
from videocopies.domain.pricing.tariff import (
    InvalidTariff,
    PricingPolicy,
    Tariff,
    UnsupportedCopyCount,
)

__all__ = [
    "MIN_SECRET_BYTES", "InvalidTariff", "PricingPolicy", "Quote", "QuoteAlreadyUsed", "QuoteExpired",
    "QuoteForged", "QuoteKey", "QuoteKeyTooShort", "QuoteKeys", "QuoteKeysClash", "QuoteNotYours", "Tariff",
    "TariffRetired", "UnsupportedCopyCount",
]
