"""What a probe learns about a file: the port's ProbeResult plus the details the worker logs."""

from __future__ import annotations

import attrs

from videocopies.application.ports import ProbeResult


@attrs.frozen
class MediaInfo(ProbeResult):
    """`width` × `height` is the display size, after `rotation` (degrees counter-clockwise,
    0/90/180/270) is applied; `frames` is counted by decoding when `decoded`, else read
    from the header (or estimated from duration × fps when the header has no count)."""

    rotation: int
    fps: float
    video_codec: str
    audio_codec: str | None
    pix_fmt: str
    bit_depth: int
    container: str
    decoded: bool
