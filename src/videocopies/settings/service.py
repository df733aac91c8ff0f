"""The application's settings (prices, grants, leases, retention) with safe defaults: what core
and the operator commands over the database read from the environment."""

from __future__ import annotations

import os
from datetime import timedelta
from typing import Any

import attrs

from videocopies.domain.coins import GrantRules, LotKind, ReferralCaps
from videocopies.domain.coins.grants import DEFAULT_VALIDITY
from videocopies.domain.objects import Lifetimes
from videocopies.domain.payments import DEFAULT_PACKAGES, CoinPackage, PackageCatalog
from videocopies.domain.pricing import MIN_SECRET_BYTES, PricingPolicy, QuoteKeys, Tariff
from videocopies.domain.quality import QualityThresholds
from videocopies.domain.retention import CheckpointsOutliveCopies, RetentionPolicy
from videocopies.settings.parse import Environ, cap, days, number, period, whole

DEFAULT_TARIFF = Tariff(version=1, per_copy={1: 5, 5: 4, 10: 3})


@attrs.frozen
class Settings:
    quote_secret: bytes = attrs.field(repr=False)
    previous_quote_secret: bytes | None = attrs.field(default=None, repr=False, kw_only=True)
    quote_keys: QuoteKeys = attrs.field(init=False, repr=False)
    pricing: PricingPolicy = PricingPolicy(DEFAULT_TARIFF)
    quote_ttl: timedelta = timedelta(minutes=10)
    lease_ttl: timedelta = timedelta(seconds=30)
    max_attempts: int = 3
    duty_ttl: timedelta = timedelta(seconds=10)  # a dead edge's polling is taken over within this
    grants: GrantRules = GrantRules()
    packages: PackageCatalog = DEFAULT_PACKAGES
    reconcile_every: timedelta = timedelta(minutes=10)
    # A credited payment the provider's list lacks is reversed once it is this old.
    reverse_unknown_after: timedelta = timedelta(minutes=10)
    expiry_sweep_every: timedelta = timedelta(minutes=1)
    # How long sources and copies stay in the store, and how often core's lifecycle duty runs.
    object_lifetimes: Lifetimes = Lifetimes()
    objects_sweep_every: timedelta = timedelta(minutes=1)
    retention: RetentionPolicy = RetentionPolicy()
    prune_every: timedelta | None = timedelta(minutes=10)  # None: no automatic pruning
    prune_batch: int | None = 1000  # None: each table in one statement
    orders_per_hour: int | None = 30  # new orders a user may confirm in an hour (None: no limit)

    @quote_keys.default
    def _quote_keys(self) -> QuoteKeys:
        return QuoteKeys.of(self.quote_secret, self.previous_quote_secret)

    @property
    def purchase_valid_for(self) -> timedelta | None:
        return self.grants.valid_for(LotKind.PURCHASE)

    @classmethod
    def from_env(cls, environ: Environ | None = None) -> Settings:
        env = os.environ if environ is None else environ
        current, previous = quote_secrets_from_env(env)
        return cls(
            quote_secret=current,
            previous_quote_secret=previous,
            quote_ttl=period(env, "VIDEOCOPIES_QUOTE_TTL_S", 600, positive=True),
            lease_ttl=timedelta(seconds=number(env, "VIDEOCOPIES_LEASE_TTL_S", 30)),
            duty_ttl=timedelta(seconds=number(env, "VIDEOCOPIES_DUTY_TTL_S", 10)),
            grants=grant_rules_from_env(env),
            packages=packages_from_env(env),
            reconcile_every=timedelta(seconds=number(env, "VIDEOCOPIES_RECONCILE_EVERY_S", 600)),
            reverse_unknown_after=timedelta(seconds=number(env, "VIDEOCOPIES_REVERSE_UNKNOWN_AFTER_S", 600)),
            expiry_sweep_every=timedelta(seconds=number(env, "VIDEOCOPIES_EXPIRY_SWEEP_EVERY_S", 60)),
            object_lifetimes=Lifetimes(
                source_grace=period(env, "VIDEOCOPIES_SOURCE_GRACE_S", 3600),
                copy_retention=period(env, "VIDEOCOPIES_COPY_RETENTION_S", 86400),
            ),
            objects_sweep_every=period(  # VIDEOCOPIES_TIDY_S: the stray sweep's old name
                env, "VIDEOCOPIES_OBJECTS_SWEEP_S", period(env, "VIDEOCOPIES_TIDY_S", 60).total_seconds(), positive=True
            ),
            orders_per_hour=whole(env, "VIDEOCOPIES_ORDERS_PER_HOUR", 30, minimum=0) or None,
            **pruning_from_env(env),
        )


def quote_secrets_from_env(env: Environ) -> tuple[bytes, bytes | None]:
    """VIDEOCOPIES_QUOTE_SECRET signs; VIDEOCOPIES_QUOTE_SECRET_PREVIOUS, while a rotation runs,
    is still accepted. Each at least 32 bytes."""
    current, previous = env.get("VIDEOCOPIES_QUOTE_SECRET"), env.get("VIDEOCOPIES_QUOTE_SECRET_PREVIOUS") or None
    if not current:
        raise SystemExit("VIDEOCOPIES_QUOTE_SECRET is not set: quotes cannot be signed without a secret")
    for name, value in (("VIDEOCOPIES_QUOTE_SECRET", current), ("VIDEOCOPIES_QUOTE_SECRET_PREVIOUS", previous)):
        if value is not None and len(value.encode()) < MIN_SECRET_BYTES:
            raise SystemExit(
                f"{name} is {len(value.encode())} bytes: a quote secret needs at least {MIN_SECRET_BYTES}"
                " (e.g. `openssl rand -base64 48`)"
            )
    if previous == current:
        raise SystemExit("VIDEOCOPIES_QUOTE_SECRET_PREVIOUS is the same as VIDEOCOPIES_QUOTE_SECRET")
    return current.encode(), previous.encode() if previous else None


def grant_rules_from_env(env: Environ) -> GrantRules:
    """VIDEOCOPIES_START_BONUS, VIDEOCOPIES_REFERRAL_BONUS (coins), the validity of each
    kind of coin: VIDEOCOPIES_{START,REFERRAL,MANUAL,PURCHASE}_VALID_DAYS (days or `never`),
    and the referral caps: VIDEOCOPIES_REFERRAL_MAX_INVITEES, _MAX_PER_DAY (users or `none`)."""
    validity = dict(DEFAULT_VALIDITY)
    for kind in LotKind:
        name = f"VIDEOCOPIES_{kind.name}_VALID_DAYS"
        if name in env:
            validity[kind] = days(env[name], name)
    return GrantRules(
        start_bonus=whole(env, "VIDEOCOPIES_START_BONUS", 50),
        referral_bonus=whole(env, "VIDEOCOPIES_REFERRAL_BONUS", 30),
        validity=validity,
        referral_caps=ReferralCaps(
            total=cap(env, "VIDEOCOPIES_REFERRAL_MAX_INVITEES", ReferralCaps().total),
            per_day=cap(env, "VIDEOCOPIES_REFERRAL_MAX_PER_DAY", ReferralCaps().per_day),
        ),
    )


def packages_from_env(env: Environ) -> PackageCatalog:
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


def quality_thresholds(env: Environ | None = None) -> QualityThresholds:
    """The quality gate's floors: VIDEOCOPIES_MIN_SSIM, VIDEOCOPIES_MIN_PHASH_DISTANCE and
    VIDEOCOPIES_MIN_PAIR_DISTANCE override the calibrated defaults (docs/quality.md)."""
    env = os.environ if env is None else env
    defaults = QualityThresholds()
    return QualityThresholds(
        min_ssim=number(env, "VIDEOCOPIES_MIN_SSIM", defaults.min_ssim),
        min_phash_distance=number(env, "VIDEOCOPIES_MIN_PHASH_DISTANCE", defaults.min_phash_distance),
        min_pair_distance=number(env, "VIDEOCOPIES_MIN_PAIR_DISTANCE", defaults.min_pair_distance),
    )


_RETENTION = {  # env name -> the policy's field; seconds, 0 allowed
    "VIDEOCOPIES_RETENTION_INBOX_S": "inbox", "VIDEOCOPIES_RETENTION_OUTBOX_S": "outbox",
    "VIDEOCOPIES_RETENTION_RECEIPTS_S": "receipts", "VIDEOCOPIES_RETENTION_QUOTES_S": "quotes",
    "VIDEOCOPIES_RETENTION_CHECKPOINTS_S": "checkpoints",
}


def pruning_from_env(environ: Environ | None = None) -> dict[str, Any]:
    """VIDEOCOPIES_RETENTION_{INBOX,OUTBOX,RECEIPTS,QUOTES,CHECKPOINTS}_S (how long a row is kept
    past its end state), VIDEOCOPIES_PRUNE_EVERY_S (0: no automatic pruning) and
    VIDEOCOPIES_PRUNE_BATCH (rows per transaction; 0: a table at once). A checkpoint must
    outlive its copy: its retention is at least VIDEOCOPIES_COPY_RETENTION_S +
    VIDEOCOPIES_SOURCE_GRACE_S."""
    env = os.environ if environ is None else environ
    defaults = RetentionPolicy()
    policy = RetentionPolicy(**{
        field: period(env, name, getattr(defaults, field).total_seconds()) for name, field in _RETENTION.items()
    })
    copy_lifetime = (period(env, "VIDEOCOPIES_COPY_RETENTION_S", 86400)
                     + period(env, "VIDEOCOPIES_SOURCE_GRACE_S", 3600))
    try:
        policy.check_copy_lifetime(copy_lifetime)
    except CheckpointsOutliveCopies:
        raise SystemExit(
            f"VIDEOCOPIES_RETENTION_CHECKPOINTS_S is {policy.checkpoints.total_seconds():g}: a checkpoint names its"
            f" copy, so it must be kept at least as long as a copy may be stored, {copy_lifetime.total_seconds():g} s"
            " (VIDEOCOPIES_COPY_RETENTION_S + VIDEOCOPIES_SOURCE_GRACE_S)"
        ) from None
    every = period(env, "VIDEOCOPIES_PRUNE_EVERY_S", 600)
    batch = env.get("VIDEOCOPIES_PRUNE_BATCH", "1000").strip() or "1000"
    if not batch.isdigit():
        raise SystemExit(f"VIDEOCOPIES_PRUNE_BATCH must be a number of rows, not {batch!r}")
    return {
        "retention": policy, "prune_every": every or None,
        "prune_batch": int(batch) or None,
    }
