"""Small clips made with FFmpeg's lavfi sources (moving pattern + tone): for the demo, the tests and the benchmarks."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from pathlib import Path

from videocopies.adapters.ffmpeg.binary import ffmpeg_binary


def make_clip(
    path: Path,
    seconds: float = 2,
    width: int = 360,
    height: int = 640,
    fps: int = 25,
    audio: bool = True,
    metadata: Mapping[str, str] | None = None,
    noise: int = 0,
    qp: int | None = None,
) -> Path:
    """Write an H.264/AAC MP4 at `path` and return it; odd sizes use yuv444p, which H.264 allows.
    `noise` (0-100) with a fixed `qp` makes a big file: noise does not compress."""
    args = [ffmpeg_binary(), "-hide_banner", "-nostdin", "-loglevel", "error", "-y"]
    args += ["-f", "lavfi", "-i", f"testsrc2=size={width}x{height}:rate={fps}:duration={seconds}"]
    if audio:
        args += ["-f", "lavfi", "-i", f"sine=frequency=440:sample_rate=48000:duration={seconds}"]
    pix_fmt = "yuv420p" if width % 2 == 0 and height % 2 == 0 else "yuv444p"
    if noise:
        args += ["-vf", f"noise=alls={noise}:allf=t"]
    args += ["-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", pix_fmt]
    if qp is not None:
        args += ["-qp", str(qp)]
    args += ["-c:a", "aac"] if audio else ["-an"]
    for key, value in (metadata or {}).items():
        args += ["-metadata", f"{key}={value}"]
    args += ["-f", "mp4", str(path)]
    subprocess.run(args, check=True, capture_output=True, timeout=60)
    return path
