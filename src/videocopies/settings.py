"""Service settings with safe defaults; every role reads them from the environment."""

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

    @quote_keys.default
    def _quote_keys(self) -> QuoteKeys:
        return QuoteKeys.of(self.quote_secret, self.previous_quote_secret)

    @property
    def purchase_valid_for(self) -> timedelta | None:
        return self.grants.valid_for(LotKind.PURCHASE)
    orders_per_hour: int | None = 30  # new orders a user may confirm in an hour (None: no limit)

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> Settings:
        env = os.environ if environ is None else environ
        current, previous = quote_secrets_from_env(env)
        return cls(
            quote_secret=current,
            previous_quote_secret=previous,
            lease_ttl=timedelta(seconds=float(env.get("VIDEOCOPIES_LEASE_TTL_S", "30"))),
            duty_ttl=timedelta(seconds=float(env.get("VIDEOCOPIES_DUTY_TTL_S", "10"))),
            grants=grant_rules_from_env(env),
            packages=packages_from_env(env),
            reconcile_every=timedelta(seconds=float(env.get("VIDEOCOPIES_RECONCILE_EVERY_S", "600"))),
            reverse_unknown_after=timedelta(seconds=float(env.get("VIDEOCOPIES_REVERSE_UNKNOWN_AFTER_S", "600"))),
            expiry_sweep_every=timedelta(seconds=float(env.get("VIDEOCOPIES_EXPIRY_SWEEP_EVERY_S", "60"))),
            object_lifetimes=Lifetimes(
                source_grace=_period(env, "VIDEOCOPIES_SOURCE_GRACE_S", 3600),
                copy_retention=_period(env, "VIDEOCOPIES_COPY_RETENTION_S", 86400),
            ),
            objects_sweep_every=_period(  # VIDEOCOPIES_TIDY_S: the stray sweep's old name
                env, "VIDEOCOPIES_OBJECTS_SWEEP_S", float(env.get("VIDEOCOPIES_TIDY_S") or 60), positive=True
            ),
            orders_per_hour=int(env["VIDEOCOPIES_ORDERS_PER_HOUR"]) or None if "VIDEOCOPIES_ORDERS_PER_HOUR" in env
            else 30,
            **pruning_from_env(env),
        )


def quote_secrets_from_env(env: os._Environ[str] | dict[str, str]) -> tuple[bytes, bytes | None]:
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


def _period(env: os._Environ[str] | dict[str, str], name: str, default: float, positive: bool = False) -> timedelta:
    """A period in seconds: 0 or more (more than 0 with `positive`)."""
    value = env.get(name, "").strip() or str(default)
    try:
        seconds = float(value)
    except ValueError:
        raise SystemExit(f"{name} must be a number of seconds, not {value!r}") from None
    if seconds < 0 or (positive and seconds == 0):
        raise SystemExit(f"{name} must be {'more than' if positive else 'at least'} 0 seconds, not {value}")
    return timedelta(seconds=seconds)


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
    """VIDEOCOPIES_START_BONUS, VIDEOCOPIES_REFERRAL_BONUS (coins), the validity of each
    kind of coin: VIDEOCOPIES_{START,REFERRAL,MANUAL,PURCHASE}_VALID_DAYS (days or `never`),
    and the referral caps: VIDEOCOPIES_REFERRAL_MAX_INVITEES, _MAX_PER_DAY (users or `none`)."""
    validity = dict(DEFAULT_VALIDITY)
    for kind in LotKind:
        name = f"VIDEOCOPIES_{kind.name}_VALID_DAYS"
        if name in env:
            validity[kind] = _days(env[name], name)
    return GrantRules(
        start_bonus=int(env.get("VIDEOCOPIES_START_BONUS", "50")),
        referral_bonus=int(env.get("VIDEOCOPIES_REFERRAL_BONUS", "30")),
        validity=validity,
        referral_caps=ReferralCaps(
            total=_cap(env, "VIDEOCOPIES_REFERRAL_MAX_INVITEES", ReferralCaps().total),
            per_day=_cap(env, "VIDEOCOPIES_REFERRAL_MAX_PER_DAY", ReferralCaps().per_day),
        ),
    )


def _cap(env: os._Environ[str] | dict[str, str], name: str, default: int | None) -> int | None:
    """A referral cap: invited users an inviter is rewarded for, or `none` for no cap."""
    value = env.get(name, "").strip().lower()
    if not value:
        return default
    if value == "none":
        return None
    if not value.isdigit():
        raise SystemExit(f"{name} must be a number of invited users or `none`, not {value!r}")
    return int(value)


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


_RETENTION = {  # env name -> the policy's field; seconds, 0 allowed
    "VIDEOCOPIES_RETENTION_INBOX_S": "inbox", "VIDEOCOPIES_RETENTION_OUTBOX_S": "outbox",
    "VIDEOCOPIES_RETENTION_RECEIPTS_S": "receipts", "VIDEOCOPIES_RETENTION_QUOTES_S": "quotes",
    "VIDEOCOPIES_RETENTION_CHECKPOINTS_S": "checkpoints",
}


def pruning_from_env(env: os._Environ[str] | dict[str, str]) -> dict[str, Any]:
    """VIDEOCOPIES_RETENTION_{INBOX,OUTBOX,RECEIPTS,QUOTES,CHECKPOINTS}_S (how long a row is kept
    past its end state), VIDEOCOPIES_PRUNE_EVERY_S (0: no automatic pruning) and
    VIDEOCOPIES_PRUNE_BATCH (rows per transaction; 0: a table at once). A checkpoint must
    outlive its copy: its retention is at least VIDEOCOPIES_COPY_RETENTION_S +
    VIDEOCOPIES_SOURCE_GRACE_S."""
    defaults = RetentionPolicy()
    policy = RetentionPolicy(**{
        field: _period(env, name, getattr(defaults, field).total_seconds()) for name, field in _RETENTION.items()
    })
    copy_lifetime = (_period(env, "VIDEOCOPIES_COPY_RETENTION_S", 86400)
                     + _period(env, "VIDEOCOPIES_SOURCE_GRACE_S", 3600))
    try:
        policy.check_copy_lifetime(copy_lifetime)
    except CheckpointsOutliveCopies:
        raise SystemExit(
            f"VIDEOCOPIES_RETENTION_CHECKPOINTS_S is {policy.checkpoints.total_seconds():g}: a checkpoint names its"
            f" copy, so it must be kept at least as long as a copy may be stored, {copy_lifetime.total_seconds():g} s"
            " (VIDEOCOPIES_COPY_RETENTION_S + VIDEOCOPIES_SOURCE_GRACE_S)"
        ) from None
    every = _period(env, "VIDEOCOPIES_PRUNE_EVERY_S", 600)
    batch = env.get("VIDEOCOPIES_PRUNE_BATCH", "1000").strip() or "1000"
    if not batch.isdigit():
        raise SystemExit(f"VIDEOCOPIES_PRUNE_BATCH must be a number of rows, not {batch!r}")
    return {
        "retention": policy, "prune_every": every or None,
        "prune_batch": int(batch) or None,
    }
