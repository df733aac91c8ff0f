"""Reading a few small grayscale frames out of a video with PyAV, cheaply: the decoder skips
frames no other frame refers to where it may, and only the pictures wanted are scaled."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import attrs
import av
import numpy as np

from videocopies.adapters.probe.pyav import SAFE_OPEN  # the source is the user's file
from videocopies.adapters.quality.sampling import THUMB_SIDE


@attrs.frozen(eq=False)
class Picture:
    """A frame `at` seconds from the first frame, as a THUMB_SIDE square of gray levels."""

    at: float
    gray: np.ndarray  # uint8: a job's ~100 kept frames as float64 were 12 MiB of a worker's peak


def _thumb(frame: av.VideoFrame) -> np.ndarray:
    if frame.width != THUMB_SIDE or frame.height != THUMB_SIDE or frame.format.name != "gray":
        frame = frame.reformat(width=THUMB_SIDE, height=THUMB_SIDE, format="gray", interpolation="AREA")
    return frame.to_ndarray()


def _opened(path: Path, skip_unreferenced: bool) -> tuple[av.container.InputContainer, av.VideoStream]:
    container = av.open(str(path), container_options=SAFE_OPEN)
    stream = container.streams.video[0]
    # One decoding thread: the fewest CPU seconds per picture (renders use the other cores).
    stream.codec_context.thread_count = 1
    # Looser decoding shortcuts: the pictures are only looked at 128 pixels wide.
    stream.codec_context.options = {"flags2": "+fast"}
    if skip_unreferenced:
        stream.codec_context.skip_frame = "NONREF"
    return container, stream


def nearest_frames(path: Path, moments: Sequence[float]) -> list[Picture]:
    """For each moment (seconds, ascending), the decodable frame nearest to it. Frames that
    no other frame refers to are skipped: the nearest one that remains is at most a frame or
    two away, and its own time is what the caller matches the source at."""
    container, stream = _opened(path, skip_unreferenced=True)
    found: list[Picture] = []
    with container:
        start: float | None = None
        want = 0
        previous: tuple[float, av.VideoFrame] | None = None
        for frame in container.decode(stream):
            if frame.time is None:
                continue
            start = frame.time if start is None else start
            at = frame.time - start
            while want < len(moments) and at >= moments[want]:
                if previous is not None and moments[want] - previous[0] < at - moments[want]:
                    found.append(Picture(previous[0], _thumb(previous[1])))
                else:
                    found.append(Picture(at, _thumb(frame)))
                want += 1
            if want == len(moments):
                break
            previous = (at, frame)
        if want < len(moments) and previous is not None:
            last = Picture(previous[0], _thumb(previous[1]))
            found += [last] * (len(moments) - want)
    return found


def frames_near(path: Path, moments: Sequence[float], reach_s: float) -> list[Picture]:
    """Every frame within `reach_s` of any of the moments, in order of time."""
    container, stream = _opened(path, skip_unreferenced=False)
    kept: list[Picture] = []
    last_moment = max(moments, default=0.0) + reach_s
    with container:
        start: float | None = None
        for frame in container.decode(stream):
            if frame.time is None:
                continue
            start = frame.time if start is None else start
            at = frame.time - start
            if any(abs(at - m) <= reach_s for m in moments):
                kept.append(Picture(at, _thumb(frame)))
            if at > last_moment:
                break
    return kept


def nearest(pictures: Sequence[Picture], moments: Sequence[float]) -> list[Picture]:
    """For each moment, the picture whose time is nearest to it."""
    if not pictures:
        raise ValueError("no frames were kept")
    return [_nearest_to(moment, pictures) for moment in moments]


def _nearest_to(moment: float, pictures: Sequence[Picture]) -> Picture:
    return min(pictures, key=lambda p: abs(p.at - moment))


def kept_frames(path: Path) -> list[Picture]:
    """The frames a renderer kept of its source (already small and gray), at the source's times."""
    with av.open(str(path), container_options=SAFE_OPEN) as container:
        return [Picture(frame.time, _thumb(frame)) for frame in container.decode(video=0) if frame.time is not None]


@attrs.frozen
class Header:
    width: int
    height: int
    duration_s: float
    fps: float


def header(path: Path) -> Header:
    """Size, seconds and frames per second as the headers state them, read as the renderer
    reads them (the container's duration first), so both place the moments alike."""
    with av.open(str(path), container_options=SAFE_OPEN) as container:
        stream = container.streams.video[0]
        fps = float(stream.average_rate or stream.guessed_rate or 0)
        if container.duration:
            duration = container.duration / av.time_base
        elif stream.duration and stream.time_base:
            duration = float(stream.duration * stream.time_base)
        else:
            duration = 0.0
        return Header(stream.codec_context.width, stream.codec_context.height, duration, fps)
