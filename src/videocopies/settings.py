"""Service settings with safe defaults; every role reads them from the environment."""

from __future__ import annotations

import os
from datetime import timedelta

import attrs

from videocopies.domain.pricing import PricingPolicy, Tariff
from videocopies.domain.quality import QualityThresholds

DEFAULT_TARIFF = Tariff(version=1, per_copy={1: 5, 5: 4, 10: 3})


@attrs.frozen
class Settings:
    quote_secret: bytes
    pricing: PricingPolicy = PricingPolicy(DEFAULT_TARIFF)
    quote_ttl: timedelta = timedelta(minutes=10)
    lease_ttl: timedelta = timedelta(seconds=30)
    max_attempts: int = 3
    start_bonus: int = 50
    start_bonus_valid_for: timedelta | None = timedelta(days=30)
    purchase_valid_for: timedelta | None = None  # bought coins never expire

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> Settings:
        env = os.environ if environ is None else environ
        secret = env.get("VIDEOCOPIES_QUOTE_SECRET")
        if not secret:
            raise SystemExit(
                "VIDEOCOPIES_QUOTE_SECRET is not set: quotes cannot be signed without a secret"
            )
        return cls(
            quote_secret=secret.encode(),
            lease_ttl=timedelta(seconds=float(env.get("VIDEOCOPIES_LEASE_TTL_S", "30"))),
        )


def quality_thresholds(env: dict[str, str] | None = None) -> QualityThresholds:
    """The quality gate's floors: VIDEOCOPIES_MIN_SSIM, VIDEOCOPIES_MIN_PHASH_DISTANCE and
    VIDEOCOPIES_MIN_PAIR_DISTANCE override the calibrated defaults (docs/quality.md)."""
    env = os.environ if env is None else env
    defaults = QualityThresholds()
    return QualityThresholds(
        min_ssim=float(env.get("VIDEOCOPIES_MIN_SSIM", defaults.min_ssim)),
        min_phash_distance=float(env.get("VIDEOCOPIES_MIN_PHASH_DISTANCE", defaults.min_phash_distance)),
        min_pair_distance=float(env.get("VIDEOCOPIES_MIN_PAIR_DISTANCE", defaults.min_pair_distance)),
    )
