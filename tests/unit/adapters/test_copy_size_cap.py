"""The video rate a copy is capped at, so that it fits the Bot API server's upload limit."""

from __future__ import annotations

from pathlib import Path

import attrs
from hypothesis import given
from hypothesis import strategies as st

from videocopies.adapters.ffmpeg.render import (
    AUDIO_BITS_PER_S,
    MIN_VIDEO_BITS_PER_S,
    SIZE_TARGET_SHARE,
    VBV_BUFFER_S,
    SourceInfo,
    ffmpeg_args,
    video_bitrate_cap,
)
from videocopies.domain.effects import EffectsPlan
from videocopies.telegram_limits import CLOUD_UPLOAD_BYTES, MIB

SOURCE = SourceInfo(width=1080, height=1920, duration_s=60.0, has_audio=True, fps=30)


def option(args: list[str], name: str) -> str | None:
    return args[args.index(name) + 1] if name in args else None


def test_no_limit_no_cap() -> None:
    args = ffmpeg_args(EffectsPlan.derive(seed=1, copy_index=0), SOURCE, Path("in.mp4"), Path("out.mp4"))

    assert option(args, "-maxrate") is None and option(args, "-bufsize") is None


def test_the_cap_follows_the_copys_length_at_its_speed() -> None:
    plan = attrs.evolve(EffectsPlan.derive(seed=1, copy_index=0), speed=0.97, audio_tempo=0.97)

    args = ffmpeg_args(plan, SOURCE, Path("in.mp4"), Path("out.mp4"), max_bytes=CLOUD_UPLOAD_BYTES)

    rate = video_bitrate_cap(CLOUD_UPLOAD_BYTES, SOURCE.duration_s / 0.97, has_audio=True)
    assert option(args, "-maxrate") == str(rate)
    assert option(args, "-bufsize") == str(int(rate * VBV_BUFFER_S))
    assert option(args, "-crf") == str(plan.crf)  # the quality setting stays; the cap only bounds it
    assert 5_000_000 < rate < 6_500_000  # 61.9 s under 50 MiB: about 5.7 Mbit/s of video


@given(
    max_mb=st.integers(min_value=1, max_value=2000),
    duration_s=st.floats(min_value=0.5, max_value=400),
    has_audio=st.booleans(),
)
def test_video_and_sound_at_their_caps_stay_within_the_target(max_mb: int, duration_s: float, has_audio: bool) -> None:
    limit = max_mb * MIB
    rate = video_bitrate_cap(limit, duration_s, has_audio)
    audio = AUDIO_BITS_PER_S * duration_s if has_audio else 0

    worst = (rate * (duration_s + VBV_BUFFER_S) + audio) / 8
    if rate > MIN_VIDEO_BITS_PER_S:  # above the floor, the limit can be met
        assert worst <= limit * SIZE_TARGET_SHARE


def test_a_cap_that_cannot_bind_is_not_given_to_x264() -> None:
    """Under a local Bot API server's 2000 MiB a few seconds of copy could take 2.4 Gb/s: x264
    refuses any rate over 2^31, so such a cap is left out rather than failing every render."""
    plan = EffectsPlan.derive(seed=1, copy_index=0)
    short = attrs.evolve(SOURCE, duration_s=5.0)
    args = ffmpeg_args(plan, short, Path("in.mp4"), Path("out.mp4"), max_bytes=2000 * MIB)
    assert "-maxrate" not in args and "-bufsize" not in args
