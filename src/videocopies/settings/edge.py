"""What `videocopies edge` reads from the environment (docs/operations.md names each variable)."""

from __future__ import annotations

import os
from pathlib import Path

import attrs

from videocopies.adapters.telegram.pacing import PacingSettings
from videocopies.settings.links import BotLink, CoreLink
from videocopies.settings.parse import Environ, number, optional_path, path, text, whole
from videocopies.telegram_limits import MediaLimits


@attrs.frozen
class Webhook:
    """VIDEOCOPIES_WEBHOOK_URL (the public URL Telegram posts to), VIDEOCOPIES_WEBHOOK_SECRET
    (16 characters or more) and VIDEOCOPIES_WEBHOOK_LISTEN (host:port this process listens on)."""

    url: str
    secret: str = attrs.field(repr=False)
    host: str = "127.0.0.1"
    port: int = 8443

    @classmethod
    def from_env(cls, env: Environ) -> Webhook | None:
        if not (url := env.get("VIDEOCOPIES_WEBHOOK_URL")):
            return None
        secret = env.get("VIDEOCOPIES_WEBHOOK_SECRET") or ""
        if len(secret) < 16:
            raise SystemExit("videocopies edge: VIDEOCOPIES_WEBHOOK_SECRET must be at least 16 characters")
        listen = text(env, "VIDEOCOPIES_WEBHOOK_LISTEN", "127.0.0.1:8443")
        host, _, port = listen.rpartition(":")
        if not port.isdigit():
            raise SystemExit(f"VIDEOCOPIES_WEBHOOK_LISTEN must be host:port, not {listen!r}")
        return cls(url, secret, host or "127.0.0.1", int(port))


def pacing_from_env(env: Environ) -> PacingSettings:
    """Telegram's limits: VIDEOCOPIES_TELEGRAM_RATE and _BURST (the whole bot), _REPLY_RESERVE
    (of the bot's burst, for replies only), _CHAT_RATE and _CHAT_BURST (one chat)."""
    try:
        return PacingSettings(
            bot_rate=number(env, "VIDEOCOPIES_TELEGRAM_RATE", 30),
            bot_burst=whole(env, "VIDEOCOPIES_TELEGRAM_BURST", 25),
            reply_reserve=whole(env, "VIDEOCOPIES_TELEGRAM_REPLY_RESERVE", 15),
            chat_rate=number(env, "VIDEOCOPIES_TELEGRAM_CHAT_RATE", 1),
            chat_burst=whole(env, "VIDEOCOPIES_TELEGRAM_CHAT_BURST", 2),
        )
    except ValueError as bad:
        raise SystemExit(f"VIDEOCOPIES_TELEGRAM_REPLY_RESERVE and VIDEOCOPIES_TELEGRAM_BURST: {bad}") from None


@attrs.frozen
class EdgeSettings:
    """Edge's process: core and the bot it links, its scratch (VIDEOCOPIES_WORK_DIR, at most
    VIDEOCOPIES_EDGE_SCRATCH_MB of downloads in hand), the shared VIDEOCOPIES_STORE_DIR (else
    signed URLs), the media limits, Telegram's pacing, how long a claimed outbox message is
    held (VIDEOCOPIES_OUTBOX_HOLD_S), the webhook (else long polling), and
    VIDEOCOPIES_EDGE_ACKS_LOG: a file where edge appends what core acknowledged (the soak's
    crash check reads it)."""

    core: CoreLink
    bot: BotLink
    work_dir: Path = Path("var/edge")
    store_dir: Path | None = None
    limits: MediaLimits = attrs.field(factory=lambda: MediaLimits.from_env({}))
    scratch_bytes: int = 2048 * 2**20
    pacing: PacingSettings = PacingSettings()
    outbox_hold_s: float = 60.0
    webhook: Webhook | None = None
    acks_log: Path | None = None

    @classmethod
    def from_env(cls, environ: Environ | None = None) -> EdgeSettings:
        env = os.environ if environ is None else environ
        core = CoreLink.from_env(env)
        bot = BotLink.from_env(env)
        if bot.token is None:
            raise SystemExit("videocopies edge: set VIDEOCOPIES_BOT_TOKEN")
        return cls(
            core=core, bot=bot, work_dir=path(env, "VIDEOCOPIES_WORK_DIR", "var/edge"),
            store_dir=optional_path(env, "VIDEOCOPIES_STORE_DIR"), limits=MediaLimits.from_env(env),
            scratch_bytes=int(number(env, "VIDEOCOPIES_EDGE_SCRATCH_MB", 2048) * 2**20),
            pacing=pacing_from_env(env), outbox_hold_s=number(env, "VIDEOCOPIES_OUTBOX_HOLD_S", 60),
            webhook=Webhook.from_env(env), acks_log=optional_path(env, "VIDEOCOPIES_EDGE_ACKS_LOG"),
        )
