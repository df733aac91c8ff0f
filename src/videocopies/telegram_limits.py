"""The size limits of the Bot API server in use, and the media limits that follow from them:
one setting, read here, used by edge, core's screens and the worker alike."""

from __future__ import annotations

from collections.abc import Mapping

import attrs

MIB = 1024 * 1024
# Bot API reference, getFile and "Sending files"; tdlib/telegram-bot-api README for --local.
CLOUD_DOWNLOAD_BYTES = 20 * MIB
CLOUD_UPLOAD_BYTES = 50 * MIB
LOCAL_BYTES = 2000 * MIB
DEFAULT_MAX_SECONDS = 180.0
DEFAULT_MAX_PIXEL_RATE = 1920 * 1080 * 60
# Edge, core and every worker must read the same values: a launcher passes these through.
ENV_NAMES = (
    "VIDEOCOPIES_TELEGRAM_LOCAL", "VIDEOCOPIES_MAX_VIDEO_MB", "VIDEOCOPIES_MAX_VIDEO_S", "VIDEOCOPIES_MAX_PIXEL_RATE",
)


@attrs.frozen
class BotApiServer:
    """What the Bot API server lets a bot fetch (`getFile`) and send (`sendVideo`)."""

    local: bool
    download_bytes: int
    upload_bytes: int

    @classmethod
    def cloud(cls) -> BotApiServer:
        return cls(local=False, download_bytes=CLOUD_DOWNLOAD_BYTES, upload_bytes=CLOUD_UPLOAD_BYTES)

    @classmethod
    def local_server(cls) -> BotApiServer:
        return cls(local=True, download_bytes=LOCAL_BYTES, upload_bytes=LOCAL_BYTES)

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> BotApiServer:
        """VIDEOCOPIES_TELEGRAM_LOCAL=1: a local server (`telegram-bot-api --local`), else Telegram's."""
        return cls.local_server() if env.get("VIDEOCOPIES_TELEGRAM_LOCAL") == "1" else cls.cloud()


@attrs.frozen
class MediaLimits:
    """What a source video may be. `max_bytes` never exceeds what the server lets us fetch;
    the pixel rate (width × height × frames a second) bounds the work one second of it costs."""

    server: BotApiServer
    max_bytes: int
    max_seconds: float = DEFAULT_MAX_SECONDS
    max_pixel_rate: float = DEFAULT_MAX_PIXEL_RATE
    min_side: int = 16
    max_side: int = 4096

    def __attrs_post_init__(self) -> None:
        if not 0 < self.max_bytes <= self.server.download_bytes:
            raise ValueError(f"max_bytes {self.max_bytes} must be 1..{self.server.download_bytes} on this server")

    @property
    def max_mb(self) -> int:
        """The byte limit in whole MiB, as screens name it."""
        return self.max_bytes // MIB

    @property
    def upload_bytes(self) -> int:
        return self.server.upload_bytes

    @classmethod
    def for_server(cls, server: BotApiServer) -> MediaLimits:
        return cls(server=server, max_bytes=server.download_bytes)

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> MediaLimits:
        """VIDEOCOPIES_TELEGRAM_LOCAL, VIDEOCOPIES_MAX_VIDEO_MB (lowers the download cap, never
        raises it), VIDEOCOPIES_MAX_VIDEO_S (180) and VIDEOCOPIES_MAX_PIXEL_RATE (1920×1080×60).
        The settings of each role pass their environment (settings/)."""
        server = BotApiServer.from_env(env)
        max_bytes = server.download_bytes
        if mb := env.get("VIDEOCOPIES_MAX_VIDEO_MB"):
            max_bytes = min(max(1, int(_positive(mb, "VIDEOCOPIES_MAX_VIDEO_MB") * MIB)), max_bytes)
        return cls(
            server=server,
            max_bytes=max_bytes,
            max_seconds=_positive(env.get("VIDEOCOPIES_MAX_VIDEO_S") or DEFAULT_MAX_SECONDS, "VIDEOCOPIES_MAX_VIDEO_S"),
            max_pixel_rate=_positive(
                env.get("VIDEOCOPIES_MAX_PIXEL_RATE") or DEFAULT_MAX_PIXEL_RATE, "VIDEOCOPIES_MAX_PIXEL_RATE"
            ),
        )


def limits_env(env: Mapping[str, str]) -> dict[str, str]:
    """The variables of `env` that set the media limits, to give a role started from it."""
    return {name: env[name] for name in ENV_NAMES if name in env}


def _positive(value: str | float, name: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise SystemExit(f"{name} must be a number, not {value!r}") from None
    if not number > 0:
        raise SystemExit(f"{name} must be more than 0, not {value!r}")
    return number
