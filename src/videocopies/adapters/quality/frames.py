"""Reading a few small grayscale frames out of a video with PyAV, cheaply: the decoder skips
frames no other frame refers to where it may, and only the pictures wanted are scaled."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import attrs
import av
import numpy as np

THUMB_SIDE = 128


@attrs.frozen(eq=False)
class Picture:
    """A frame `at` seconds from the first frame, as a THUMB_SIDE square of gray levels."""

    at: float
    gray: np.ndarray


def _thumb(frame: av.VideoFrame) -> np.ndarray:
    small = frame.reformat(width=THUMB_SIDE, height=THUMB_SIDE, format="gray", interpolation="AREA")
    return small.to_ndarray().astype(np.float64)


def _opened(path: Path, skip_unreferenced: bool) -> tuple[av.container.InputContainer, av.VideoStream]:
    container = av.open(str(path))
    stream = container.streams.video[0]
    stream.thread_type = "SLICE"
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


def duration_and_rate(path: Path) -> tuple[float, float]:
    """Seconds and frames per second the header states (0 when it does not)."""
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        fps = float(stream.average_rate or stream.guessed_rate or 0)
        if stream.duration and stream.time_base:
            return float(stream.duration * stream.time_base), fps
        return (container.duration or 0) / av.time_base, fps
