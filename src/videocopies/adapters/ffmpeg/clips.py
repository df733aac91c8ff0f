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


# The calibration corpus of the copy quality gate: kinds of video users send, made from lavfi
# sources so every machine generates the same ones.
SCENES: Mapping[str, str] = {
    # A still, softly lit background; a head-sized shape that bobs and a mouth that opens.
    "talking_head": (
        "gradients=size={w}x{h}:rate={fps}:speed=0.004:seed=7:c0=0x40485c:c1=0x9c8a78,"
        "drawbox=x='iw*0.3+iw*0.02*sin(2*PI*t*0.7)':y='ih*0.25+ih*0.01*sin(2*PI*t*1.3)'"
        ":w=iw*0.4:h=ih*0.35:color=0xd9a384:t=fill,"
        "drawbox=x='iw*0.43':y='ih*0.48':w=iw*0.14:h='ih*0.01+ih*0.025*abs(sin(2*PI*t*3))'"
        ":color=0x5a2a2a:t=fill"
    ),
    # Sharp, mostly still content (a pattern with text) with a cursor moving across it.
    "screen_recording": (
        "testsrc=size={w}x{h}:rate={fps},"
        "drawbox=x='iw*0.1+iw*0.7*t/{seconds}':y='ih*0.6':w=12:h=18:color=black:t=fill"
    ),
    # The whole picture moves fast: a busy pattern scrolling sideways.
    "fast_motion": "testsrc2=size={w}x{h}:rate={fps},scroll=horizontal=0.03:vertical=0.01",
    # One picture held for the whole clip.
    "static_image": "testsrc2=size={w}x{h}:rate={fps},trim=end_frame=1,loop=loop=-1:size=1,setpts=N/{fps}/TB",
    # A night shot: dim, low contrast, grainy.
    "dark_scene": "testsrc2=size={w}x{h}:rate={fps},lutyuv=y='16+val*0.18':u='128+(val-128)*0.3'"
                  ":v='128+(val-128)*0.3',noise=alls=4:allf=t",
}


def make_scene(path: Path, scene: str, seconds: float = 2, width: int = 360, height: int = 640, fps: int = 25) -> Path:
    """Write one calibration clip of the given SCENES kind (H.264 + a tone) at `path`."""
    graph = SCENES[scene].format(w=width, h=height, fps=fps, seconds=seconds)
    args = [ffmpeg_binary(), "-hide_banner", "-nostdin", "-loglevel", "error", "-y"]
    args += ["-f", "lavfi", "-i", graph, "-f", "lavfi", "-i", "sine=frequency=330:sample_rate=48000"]
    args += ["-t", str(seconds), "-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv420p"]
    args += ["-c:a", "aac", "-f", "mp4", str(path)]
    subprocess.run(args, check=True, capture_output=True, timeout=120)
    return path
