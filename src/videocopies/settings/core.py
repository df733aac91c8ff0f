"""What `videocopies core` reads from the environment (docs/operations.md names each variable)."""

from __future__ import annotations

import os
from pathlib import Path

import attrs

from videocopies.adapters.http.core_urls import hosts_from
from videocopies.settings.links import BotLink, S3Link
from videocopies.settings.parse import Environ, flag, number, optional, optional_path, text, whole
from videocopies.settings.service import Settings
from videocopies.telegram_limits import MediaLimits


@attrs.frozen
class Database:
    """VIDEOCOPIES_DATABASE_URL (may point at PgBouncer), VIDEOCOPIES_LISTEN_URL (straight to
    PostgreSQL, for LISTEN), VIDEOCOPIES_DATABASE_DIRECT=1 (no pooler in between), the pools'
    sizes (VIDEOCOPIES_POOL_SIZE, VIDEOCOPIES_LEASE_POOL_SIZE), how long a request waits for a
    connection (VIDEOCOPIES_DB_WAIT_S) and how often a parked claim looks anyway
    (VIDEOCOPIES_SAFETY_POLL_S)."""

    url: str
    listen_url: str | None = None
    direct: bool = False
    pool_size: int = 4
    lease_pool_size: int = 4
    safety_poll_s: float = 10.0
    wait_s: float = 10.0

    @classmethod
    def from_env(cls, env: Environ, url: str) -> Database:
        return cls(
            url=url, listen_url=env.get("VIDEOCOPIES_LISTEN_URL"), direct=flag(env, "VIDEOCOPIES_DATABASE_DIRECT"),
            pool_size=whole(env, "VIDEOCOPIES_POOL_SIZE", 4, minimum=1),
            lease_pool_size=whole(env, "VIDEOCOPIES_LEASE_POOL_SIZE", 4, minimum=0),
            safety_poll_s=number(env, "VIDEOCOPIES_SAFETY_POLL_S", 10), wait_s=number(env, "VIDEOCOPIES_DB_WAIT_S", 10),
        )

    def gateways(self) -> dict[str, object]:
        """The configuration of the PostgreSQL gateways' container."""
        return {
            "database_url": self.url, "pool_size": self.pool_size, "listen_url": self.listen_url,
            "direct": self.direct, "lease_pool_size": self.lease_pool_size, "safety_poll_s": self.safety_poll_s,
            "wait_s": self.wait_s,
        }


@attrs.frozen
class CoreSettings:
    """Core's process: its database, where it listens (VIDEOCOPIES_CORE_HOST / _PORT, https with
    VIDEOCOPIES_TLS_CERT and VIDEOCOPIES_TLS_KEY), the store the Job API signs URLs for
    (VIDEOCOPIES_S3_*) or the shared VIDEOCOPIES_STORE_DIR its object lifecycle tidies, the bot
    behind the payment provider, the media limits, VIDEOCOPIES_OUTBOX_MAX_ATTEMPTS (claims of
    one outbox message before it is given up) and VIDEOCOPIES_RELOCATION_HOSTS (the https hosts
    `/v1/admin/moved` may send the nodes to; none: only loopback)."""

    service: Settings
    database: Database
    host: str = "127.0.0.1"
    port: int = 8700
    tls: tuple[str, str] | None = None
    s3: S3Link | None = None
    store_dir: Path | None = None
    bot: BotLink = BotLink()
    limits: MediaLimits = attrs.field(factory=lambda: MediaLimits.from_env({}))
    outbox_max_attempts: int = 8
    relocation_hosts: frozenset[str] = frozenset()

    @property
    def lease_sweep_s(self) -> float:
        """Lapsed leases are found within a third of their length (and at least every 10 s)."""
        return min(10.0, self.service.lease_ttl.total_seconds() / 3)

    @classmethod
    def from_env(cls, database_url: str, environ: Environ | None = None) -> CoreSettings:
        env = os.environ if environ is None else environ
        return cls(
            service=Settings.from_env(env), database=Database.from_env(env, database_url),
            host=text(env, "VIDEOCOPIES_CORE_HOST", "127.0.0.1"), port=whole(env, "VIDEOCOPIES_CORE_PORT", 8700),
            tls=tls_from_env(env), s3=S3Link.from_env(env), store_dir=optional_path(env, "VIDEOCOPIES_STORE_DIR"),
            bot=BotLink.from_env(env), limits=MediaLimits.from_env(env),
            outbox_max_attempts=whole(env, "VIDEOCOPIES_OUTBOX_MAX_ATTEMPTS", 8, minimum=1),
            relocation_hosts=hosts_from(env.get("VIDEOCOPIES_RELOCATION_HOSTS", "")),
        )


def tls_from_env(env: Environ) -> tuple[str, str] | None:
    cert, key = optional(env, "VIDEOCOPIES_TLS_CERT"), optional(env, "VIDEOCOPIES_TLS_KEY")
    if bool(cert) != bool(key):
        raise SystemExit("videocopies core: set both VIDEOCOPIES_TLS_CERT and VIDEOCOPIES_TLS_KEY, or neither")
    return (cert, key) if cert and key else None
