"""Pure rules: which sources we accept, and when a rendered copy matches its source."""

from __future__ import annotations

import attrs

from videocopies.adapters.probe.errors import (
    CopyRejected,
    FrameTooLarge,
    InvalidMedia,
    NotAVideo,
    SourceTooLong,
)
from videocopies.application.ports import ProbeResult
from videocopies.telegram_limits import MediaLimits


@attrs.frozen
class Limits:
    """What a source may be; sides are checked on the coded frame, before any decoding."""

    min_side: int = 16
    max_side: int = 4096
    max_bytes: int | None = None
    max_seconds: float | None = None
    max_pixel_rate: float | None = None

    @classmethod
    def of(cls, media: MediaLimits) -> Limits:
        """The service's limits for a source (edge's and the worker's checks are the same)."""
        return cls(media.min_side, media.max_side, media.max_bytes, media.max_seconds, media.max_pixel_rate)


def check_length(duration_s: float | None, limits: Limits) -> None:
    """Refused from the header, before hours of video are decoded to find out."""
    if duration_s is not None and limits.max_seconds is not None and duration_s > limits.max_seconds:
        raise SourceTooLong(f"{duration_s:.0f} s long, longer than the {limits.max_seconds:.0f} s limit")


def check_pixel_rate(width: int, height: int, fps: float, limits: Limits) -> None:
    """The work a second of video costs; a frame rate the header does not give (0) is not judged."""
    rate = width * height * fps
    if limits.max_pixel_rate is not None and rate > limits.max_pixel_rate:
        raise FrameTooLarge(
            f"{width}×{height} at {fps:g} frames a second: {rate / 1e6:.0f} million pixels a second, "
            f"over the {limits.max_pixel_rate / 1e6:.0f} million limit"
        )


def check_header_tells_the_length(
    header_s: float | None, header_frames: int, fps: float, index_span_s: float | None, limits: Limits
) -> None:
    """The limits are judged on the header's duration: a header that claims far less than the
    frames its index lists, or than its own frame count takes at its own rate, hides the work."""
    if header_s is not None and index_span_s is not None and index_span_s > header_s * 1.5 + 5:
        raise InvalidMedia(f"the header says {header_s:.0f} s, but its frames run {index_span_s:.0f} s")
    if header_s is not None and header_frames and fps > 0 and header_frames > header_s * fps * 1.5 + 10:
        raise InvalidMedia(
            f"the header says {header_s:.0f} s at {fps:g} frames a second, but counts {header_frames} frames"
        )
    check_length(index_span_s, limits)


def check_picture(width: int, height: int, header_width: int, header_height: int, number: int) -> None:
    """A picture larger than the header said: the limits were judged on a size the file lied about."""
    if width > header_width or height > header_height:
        raise InvalidMedia(
            f"the header says {header_width}×{header_height}, but picture {number} is {width}×{height}"
        )


@attrs.frozen
class CopyTolerance:
    """How far a copy may drift from its source. A 4:2:0 encode rounds odd sides to even,
    hence one pixel; AAC priming and frame rounding move the duration a little."""

    duration_s: float = 0.12
    duration_ratio: float = 0.02
    size_px: int = 1


def check_dimensions(width: int, height: int, limits: Limits) -> None:
    if not (limits.min_side <= width <= limits.max_side and limits.min_side <= height <= limits.max_side):
        too = FrameTooLarge if min(width, height) >= limits.min_side else InvalidMedia
        raise too(f"absurd dimensions {width}×{height}: each side must be {limits.min_side}–{limits.max_side} px")


def check_timing(duration_s: float | None, frames: int) -> float:
    """A video has a positive duration and at least two frames; one frame is a still image."""
    if frames == 0:
        raise InvalidMedia("the video stream holds no frames")
    if frames == 1:
        raise NotAVideo("a single frame: a still image, not a video")
    if duration_s is None or duration_s <= 0:
        raise InvalidMedia("zero duration")
    return duration_s


def check_copy(source: ProbeResult, copy: ProbeResult, speed: float, tolerance: CopyTolerance) -> None:
    """A copy keeps the source's streams and size, and lasts the source's duration / speed."""
    if speed <= 0:
        raise ValueError(f"speed must be positive, got {speed}")
    problems = []
    if copy.frames <= 0:
        problems.append("no video frames")
    if source.has_audio and not copy.has_audio:
        problems.append("audio track missing")
    if copy.has_audio and not source.has_audio:
        problems.append("audio track the source does not have")
    if abs(copy.width - source.width) > tolerance.size_px or abs(copy.height - source.height) > tolerance.size_px:
        problems.append(f"size {copy.width}×{copy.height}, expected {source.width}×{source.height}")
    expected = source.duration_s / speed
    allowed = max(tolerance.duration_s, tolerance.duration_ratio * expected)
    if abs(copy.duration_s - expected) > allowed:
        problems.append(f"duration {copy.duration_s:.3f} s, expected {expected:.3f} s ± {allowed:.3f} s")
    if problems:
        raise CopyRejected("; ".join(problems))
