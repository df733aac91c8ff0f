"""What edge learns about a downloaded source before a quote: its header, its first picture,
and the service's limits applied to the file itself, never to what Telegram says about it."""

from __future__ import annotations

import asyncio
import stat
import threading
import time
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Literal

import attrs
import av
from av.container import InputContainer

from videocopies.adapters.probe.errors import (
    FrameTooLarge,
    InvalidMedia,
    MediaRejected,
    NotAVideo,
    ProbeTimedOut,
    SourceTooBig,
    SourceTooLong,
)
from videocopies.adapters.probe.pyav import (
    _IMAGE_DEMUXERS,
    check_not_cut,
    first,
    frame_rate,
    header_duration,
    index_span,
    open_media,
)
from videocopies.adapters.probe.rules import (
    Limits,
    check_dimensions,
    check_header_tells_the_length,
    check_length,
    check_picture,
    check_pixel_rate,
)
from videocopies.telegram_limits import MediaLimits

Refusal = Literal["too_big", "not_a_video", "too_long", "too_large_frame", "unreadable"]
# The thread stops at its next packet once the budget is spent; this covers one packet's read.
_GRACE_S = 1.0


@attrs.frozen
class SourceFacts:
    """Measured on the file: `duration_s` in seconds, `width` × `height` as coded (as displayed
    once the first picture gives the rotation), `fps` 0 when the header gives none. With a
    `refusal`, the figures measured before it and 0 for the rest (a duration found too long
    by timestamps is how far they were read); `reason` says in one line what was found."""

    size: int
    duration_s: float = 0.0
    width: int = 0
    height: int = 0
    fps: float = 0.0
    refusal: Refusal | None = None
    reason: str = ""


async def inspect_source(path: Path, limits: MediaLimits, budget_s: float = 10.0) -> SourceFacts:
    """Inspect a downloaded source in a thread, for at most about `budget_s`: a file that takes
    longer is refused as unreadable, and the thread stops at its next packet."""
    cancelled = threading.Event()
    try:
        async with asyncio.timeout(budget_s + _GRACE_S):
            return await asyncio.to_thread(inspect_source_blocking, path, limits, budget_s, cancelled.is_set)
    except TimeoutError:
        return SourceFacts(_size(path), refusal="unreadable", reason="inspection ran past its time budget")
    finally:
        cancelled.set()


def inspect_source_blocking(
    path: Path,
    limits: MediaLimits,
    budget_s: float = 10.0,
    cancelled: Callable[[], bool] = lambda: False,
    clock: Callable[[], float] = time.monotonic,
) -> SourceFacts:
    deadline = clock() + budget_s
    try:
        found = path.stat()
    except OSError as e:
        return SourceFacts(0, refusal="unreadable", reason=f"cannot be read: {e.strerror}")
    if not stat.S_ISREG(found.st_mode):
        return SourceFacts(0, refusal="unreadable", reason="not a regular file")
    size = found.st_size
    known: dict[str, float] = {}
    try:
        if size > limits.max_bytes:
            raise SourceTooBig(f"{size} bytes, over the {limits.max_bytes}-byte limit")
        if size == 0:
            raise NotAVideo("empty file")
        with open_media(path, budget_s) as container:
            return _facts(container, size, Limits.of(limits), lambda: cancelled() or clock() > deadline, known)
    except MediaRejected as refused:
        return SourceFacts(
            size, known.get("duration_s", 0.0), int(known.get("width", 0)), int(known.get("height", 0)),
            known.get("fps", 0.0), _refusal(refused), refused.reason,
        )
    except Exception as e:  # noqa: BLE001 - a file must never take its inspector down
        return SourceFacts(size, refusal="unreadable", reason=f"{type(e).__name__}: {e}")


def _facts(
    container: InputContainer, size: int, limits: Limits, expired: Callable[[], bool], known: dict[str, float]
) -> SourceFacts:
    if container.format.name in _IMAGE_DEMUXERS or container.format.name.endswith("_pipe"):
        raise NotAVideo(f"a still image ({container.format.name}), not a video")
    video = first(container.streams.video)
    if video is None:
        raise NotAVideo("audio only: no video stream" if container.streams.audio else "no video stream")
    if video.frames == 1:
        raise NotAVideo("a single frame: a still image, not a video")
    width, height = video.codec_context.width, video.codec_context.height
    fps = frame_rate(video)
    known.update(width=width, height=height, fps=fps)
    check_dimensions(width, height, limits)
    check_pixel_rate(width, height, fps, limits)
    check_not_cut(container, size)
    duration_s = header_duration(container, video)
    known.update(duration_s=duration_s or 0.0)
    check_length(duration_s, limits)
    check_header_tells_the_length(duration_s, video.frames, fps, index_span(video), limits)
    rotation, span_s = _read_packets(
        container, video, (width, height), duration_s is None, limits.max_seconds, expired, known
    )
    if duration_s is None:
        duration_s = span_s
    if duration_s is None or not duration_s > 0:
        raise InvalidMedia("no duration: neither the header nor the timestamps give one")
    check_length(duration_s, limits)
    if rotation % 180 == 90:
        width, height = height, width
    return SourceFacts(size, duration_s, width, height, fps)


def _read_packets(
    container: InputContainer,
    video: av.VideoStream,
    header_size: tuple[int, int],
    measure: bool,
    max_s: float | None,
    expired: Callable[[], bool],
    known: dict[str, float],
) -> tuple[int, float | None]:
    """Decode the first picture (it must decode, no larger than `header_size`; its rotation is
    the display's). When `measure`, go on reading packets without decoding them, to span the
    video by its timestamps; a span past `max_s` is refused as soon as it is seen."""
    rotation: int | None = None
    start: Fraction | None = None
    end: Fraction | None = None
    try:
        for packet in container.demux(video):
            if expired():
                raise ProbeTimedOut("inspection ran past its time budget")
            if rotation is None:
                for frame in packet.decode():
                    check_picture(frame.width, frame.height, *header_size, 1)
                    rotation = round(frame.rotation) % 360
                    break
            if not measure and rotation is not None:
                break
            if packet.pts is None or packet.time_base is None:
                continue
            at = packet.pts * packet.time_base
            start = at if start is None else min(start, at)
            stop = at + (packet.duration or 0) * packet.time_base
            end = stop if end is None else max(end, stop)
            if max_s is not None and end - start > max_s:
                known.update(duration_s=float(end - start))
                raise SourceTooLong(f"longer than the {max_s:.0f} s limit (over {float(end - start):.0f} s)")
    except av.FFmpegError as e:
        raise InvalidMedia(f"reading failed: {e.strerror or e}") from e
    if rotation is None:
        raise InvalidMedia("not a single picture decodes")
    return rotation, float(end - start) if start is not None and end is not None else None


def _refusal(refused: MediaRejected) -> Refusal:
    for kind, refusal in _REFUSALS:
        if isinstance(refused, kind):
            return refusal
    return "unreadable"


_REFUSALS: tuple[tuple[type[MediaRejected], Refusal], ...] = (
    (SourceTooBig, "too_big"),
    (SourceTooLong, "too_long"),
    (FrameTooLarge, "too_large_frame"),
    (NotAVideo, "not_a_video"),
)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0
