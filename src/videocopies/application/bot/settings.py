"""What the bot accepts and gives: video limits, the start bonus, the hourly order limit."""

from __future__ import annotations

from datetime import timedelta

import attrs

from videocopies.telegram_limits import CLOUD_DOWNLOAD_BYTES, DEFAULT_MAX_PIXEL_RATE, DEFAULT_MAX_SECONDS


@attrs.frozen
class BotSettings:
    max_video_bytes: int = CLOUD_DOWNLOAD_BYTES
    max_video_seconds: float = DEFAULT_MAX_SECONDS
    max_pixel_rate: float = DEFAULT_MAX_PIXEL_RATE  # width × height × frames a second
    start_bonus: int = 50
    start_bonus_valid_for: timedelta | None = timedelta(days=30)
    orders_per_hour: int | None = 30  # None: no limit
