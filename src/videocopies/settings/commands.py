"""What the operator commands read from the environment: the database they work on, `deploy
core`, `payments`, `copies make` and `all-in-one`."""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import attrs

from videocopies.settings.links import DEFAULT_CORE_URL, BotLink
from videocopies.settings.parse import Environ, number, optional, path, text
from videocopies.settings.service import Settings
from videocopies.settings.worker import ffmpeg_memory_bytes


def database_url(given: str | None, environ: Environ | None = None) -> str:
    """--database-url, else VIDEOCOPIES_DATABASE_URL."""
    env = os.environ if environ is None else environ
    if not (url := given or env.get("VIDEOCOPIES_DATABASE_URL")):
        raise SystemExit("videocopies: no database given (--database-url or VIDEOCOPIES_DATABASE_URL)")
    return url


@attrs.frozen
class DeploySettings:
    """`deploy core`: the database and a control node's token (VIDEOCOPIES_DATABASE_URL,
    VIDEOCOPIES_NODE_TOKEN; the command refuses without them), the running core
    (VIDEOCOPIES_CORE_URL), the new core's host (VIDEOCOPIES_CORE_HOST), where its log goes
    (VIDEOCOPIES_WORK_DIR) and the lease length the switch waits out (VIDEOCOPIES_LEASE_TTL_S).
    `environ` is what the new core is started with."""

    environ: dict[str, str] = attrs.field(repr=False)
    database_url: str | None = None
    node_token: str | None = attrs.field(default=None, repr=False)
    old_url: str = DEFAULT_CORE_URL
    host: str = "127.0.0.1"
    work_dir: Path = Path("var")
    lease_ttl: timedelta = timedelta(seconds=30)

    @classmethod
    def from_env(cls, environ: Environ | None = None) -> DeploySettings:
        env = os.environ if environ is None else environ
        return cls(
            environ=dict(env), database_url=optional(env, "VIDEOCOPIES_DATABASE_URL"),
            node_token=optional(env, "VIDEOCOPIES_NODE_TOKEN"),
            old_url=env.get("VIDEOCOPIES_CORE_URL") or DEFAULT_CORE_URL,
            host=text(env, "VIDEOCOPIES_CORE_HOST", "127.0.0.1"),
            work_dir=path(env, "VIDEOCOPIES_WORK_DIR", "var"),
            lease_ttl=timedelta(seconds=number(env, "VIDEOCOPIES_LEASE_TTL_S", 30)),
        )


@attrs.frozen
class PaymentsSettings:
    """`payments reconcile|refund`: the application's settings and the bot whose payments they
    are (VIDEOCOPIES_BOT_TOKEN is required)."""

    service: Settings
    bot: BotLink

    @classmethod
    def from_env(cls, environ: Environ | None = None) -> PaymentsSettings:
        env = os.environ if environ is None else environ
        service, bot = Settings.from_env(env), BotLink.from_env(env)
        if bot.token is None:
            raise SystemExit("videocopies payments: set VIDEOCOPIES_BOT_TOKEN to reach the payment provider")
        return cls(service, bot)


@attrs.frozen
class AllInOneSettings:
    """`all-in-one`: the bot (none: the simulator), and the quote secret and panel password
    (VIDEOCOPIES_QUOTE_SECRET, VIDEOCOPIES_CONTROL_PASSWORD; unset: made on the first run and
    kept in the data directory)."""

    bot: BotLink = BotLink()
    quote_secret: str | None = attrs.field(default=None, repr=False)
    control_password: str | None = attrs.field(default=None, repr=False)

    @classmethod
    def from_env(cls, environ: Environ | None = None) -> AllInOneSettings:
        env = os.environ if environ is None else environ
        return cls(
            bot=BotLink.from_env(env), quote_secret=optional(env, "VIDEOCOPIES_QUOTE_SECRET"),
            control_password=optional(env, "VIDEOCOPIES_CONTROL_PASSWORD"),
        )


def copies_make_memory_bytes(environ: Environ | None = None) -> int:
    """`copies make` gives FFmpeg what a worker does (VIDEOCOPIES_FFMPEG_MEMORY_MB)."""
    return ffmpeg_memory_bytes(os.environ if environ is None else environ)

