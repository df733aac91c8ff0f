"""Service settings with safe defaults; every role reads them from the environment."""

from __future__ import annotations

import os
from datetime import timedelta

import attrs

from videocopies.domain.pricing import PricingPolicy, Tariff

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
    duty_ttl: timedelta = timedelta(seconds=10)  # a dead edge's polling is taken over within this
    orders_per_hour: int | None = 30  # new orders a user may confirm in an hour (None: no limit)

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
            duty_ttl=timedelta(seconds=float(env.get("VIDEOCOPIES_DUTY_TTL_S", "10"))),
            orders_per_hour=int(env["VIDEOCOPIES_ORDERS_PER_HOUR"]) or None if "VIDEOCOPIES_ORDERS_PER_HOUR" in env
            else 30,
        )
