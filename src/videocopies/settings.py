"""Service settings with safe defaults; every role reads them from the environment."""

from __future__ import annotations

import os
from datetime import timedelta

import attrs

from videocopies.domain.coins import GrantRules, LotKind
from videocopies.domain.coins.grants import DEFAULT_VALIDITY
from videocopies.domain.payments import DEFAULT_PACKAGES, CoinPackage, PackageCatalog
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
    duty_ttl: timedelta = timedelta(seconds=10)  # a dead edge's polling is taken over within this
    grants: GrantRules = GrantRules()
    packages: PackageCatalog = DEFAULT_PACKAGES
    reconcile_every: timedelta = timedelta(minutes=10)
    expiry_sweep_every: timedelta = timedelta(minutes=1)

    @property
    def purchase_valid_for(self) -> timedelta | None:
        return self.grants.valid_for(LotKind.PURCHASE)
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
            grants=grant_rules_from_env(env),
            packages=packages_from_env(env),
            reconcile_every=timedelta(seconds=float(env.get("VIDEOCOPIES_RECONCILE_EVERY_S", "600"))),
            expiry_sweep_every=timedelta(seconds=float(env.get("VIDEOCOPIES_EXPIRY_SWEEP_EVERY_S", "60"))),
            orders_per_hour=int(env["VIDEOCOPIES_ORDERS_PER_HOUR"]) or None if "VIDEOCOPIES_ORDERS_PER_HOUR" in env
            else 30,
        )


def _days(value: str, name: str) -> timedelta | None:
    """A validity in days, or `never`."""
    if value.strip().lower() == "never":
        return None
    try:
        days = float(value)
    except ValueError:
        raise SystemExit(f"{name} must be a number of days or 'never', not {value!r}") from None
    if days <= 0:
        raise SystemExit(f"{name} must be more than 0 days (or 'never')")
    return timedelta(days=days)


def grant_rules_from_env(env: os._Environ[str] | dict[str, str]) -> GrantRules:
    """VIDEOCOPIES_START_BONUS, VIDEOCOPIES_REFERRAL_BONUS (coins), and the validity of each
    kind of coin: VIDEOCOPIES_{START,REFERRAL,MANUAL,PURCHASE}_VALID_DAYS (days or `never`)."""
    validity = dict(DEFAULT_VALIDITY)
    for kind in LotKind:
        name = f"VIDEOCOPIES_{kind.name}_VALID_DAYS"
        if name in env:
            validity[kind] = _days(env[name], name)
    return GrantRules(
        start_bonus=int(env.get("VIDEOCOPIES_START_BONUS", "50")),
        referral_bonus=int(env.get("VIDEOCOPIES_REFERRAL_BONUS", "30")),
        validity=validity,
    )


def packages_from_env(env: os._Environ[str] | dict[str, str]) -> PackageCatalog:
    """VIDEOCOPIES_COIN_PACKAGES: `stars:coins` pairs, comma-separated (e.g. `50:100,100:220`)."""
    spec = env.get("VIDEOCOPIES_COIN_PACKAGES")
    if not spec:
        return DEFAULT_PACKAGES
    try:
        packages = [CoinPackage(*map(int, pair.split(":"))) for pair in spec.split(",")]
    except (TypeError, ValueError):
        raise SystemExit(f"VIDEOCOPIES_COIN_PACKAGES must look like 50:100,100:220, not {spec!r}") from None
    if len({p.stars for p in packages}) != len(packages):
        raise SystemExit("VIDEOCOPIES_COIN_PACKAGES: two packages at the same price")
    return PackageCatalog.of(packages)


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
