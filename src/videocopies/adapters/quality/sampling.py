"""Which frames the quality gate looks at: the same few moments of every video, spread evenly.
Pure, so the renderer can keep the source's frames at those moments while it decodes them."""

from __future__ import annotations

SAMPLES = 12
THUMB_SIDE = 128
# A copy's frame shows the source within a frame of the moment, at any planned speed.
REACH_FRAMES = 1.5
# A copy's kept frames are placed by its own duration, which its headers may state a frame or
# so apart from the source's divided by the speed: keep a little more around each moment.
COPY_REACH_FRAMES = 2.5


def moments(duration_s: float, count: int = SAMPLES) -> list[float]:
    """Evenly spread moments, each in the middle of its share of the video."""
    return [duration_s * (i + 0.5) / count for i in range(count)]


def reach_s(fps: float, frames: float = REACH_FRAMES) -> float:
    return frames / (fps if fps > 0 else 25.0)


def kept_frames_filter(duration_s: float, fps: float, frames: float = REACH_FRAMES, count: int = SAMPLES) -> str:
    """An FFmpeg filter chain that keeps only the frames within `frames` frames of the moments,
    as THUMB_SIDE squares of gray levels (what PyAV would make of them in frames.py)."""
    per_s = count / duration_s
    # Distance, in shares of a moment's spacing, from t to the nearest moment (i + 0.5) / per_s.
    offset = f"(t-start_t)*{per_s:.6f}-0.5"
    near = f"lte(abs({offset}-round({offset}))\\,{reach_s(fps, frames) * per_s:.6f})"
    return f"select='{near}',scale={THUMB_SIDE}:{THUMB_SIDE}:flags=area,format=gray"
