"""Pricing: versioned tariffs and signed, expiring, single-use quotes."""

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
    "InvalidTariff", "PricingPolicy", "Quote", "QuoteAlreadyUsed", "QuoteExpired",
    "QuoteForged", "QuoteNotYours", "Tariff", "TariffRetired", "UnsupportedCopyCount",
]
