"""A corpus of hostile and unusual inputs, made on the spot with FFmpeg's lavfi sources and Python."""

from __future__ import annotations

import io
import os
import subprocess
import zipfile
from pathlib import Path

from videocopies.adapters.ffmpeg.binary import ffmpeg_binary
from videocopies.adapters.ffmpeg.clips import make_clip

# Each is refused: (file name, what the refusal says).
BAD = {
    "empty": "empty file",
    "random_bytes": "not a media file",
    "truncated": "",
    "audio_only": "audio only",
    "huge_header": "absurd dimensions",
    "very_long": "longer than",
    "over_limit": "limit",
    "image": "still image",
    "zip": "not a media file",
}
# Each is unusual but valid: copies are made.
UNUSUAL = ("no_audio", "rotated", "variable_frame_rate", "ten_bit")


def ffmpeg(*args: str) -> None:
    cmd = [ffmpeg_binary(), "-hide_banner", "-nostdin", "-loglevel", "error", "-y", *args]
    subprocess.run(cmd, check=True, capture_output=True, timeout=120)


def clip(d: Path) -> Path:
    path = d / "clip.mp4"
    return path if path.exists() else make_clip(path, seconds=1, width=360, height=640)


def make_bad(name: str, d: Path, over_bytes: int) -> Path:
    """The file for `name`; `over_bytes` is the size limit it must exceed (a sparse file)."""
    d.mkdir(parents=True, exist_ok=True)
    if name == "empty":
        (path := d / "empty.mp4").write_bytes(b"")
    elif name == "random_bytes":
        (path := d / "random.mp4").write_bytes(os.urandom(64 * 1024))
    elif name == "truncated":
        data = clip(d).read_bytes()
        (path := d / "truncated.mp4").write_bytes(data[: len(data) // 2])
    elif name == "audio_only":
        ffmpeg("-f", "lavfi", "-i", "sine=duration=2", "-c:a", "aac", "-f", "mp4", str(path := d / "audio.mp4"))
    elif name == "huge_header":
        # Two real 8000x8000 frames: the header says so, and the prober must refuse before decoding.
        ffmpeg("-f", "lavfi", "-i", "color=c=black:s=8000x8000:r=25:d=0.08", "-c:v", "libx264", "-preset",
               "ultrafast", "-f", "mp4", str(path := d / "huge.mp4"))
    elif name == "very_long":
        ffmpeg("-f", "lavfi", "-i", "color=c=gray:s=64x64:r=1:d=7200", "-c:v", "libx264", "-preset", "ultrafast",
               "-f", "mp4", str(path := d / "long.mp4"))
    elif name == "over_limit":
        data = clip(d).read_bytes()
        with open(path := d / "big.mp4", "wb") as out:
            out.write(data)
            out.truncate(over_bytes + 1)
    elif name == "image":
        ffmpeg("-f", "lavfi", "-i", "testsrc2=size=360x640:rate=1:duration=1", "-frames:v", "1",
               str(path := d / "image.png"))
    elif name == "zip":
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as archive:
            archive.write(clip(d), "clip.mp4")
        (path := d / "archive.mp4").write_bytes(buffer.getvalue())
    else:
        raise ValueError(name)
    return path


def make_unusual(name: str, d: Path) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    if name == "no_audio":
        return make_clip(d / "silent.mp4", seconds=1, audio=False)
    if name == "rotated":
        ffmpeg("-display_rotation:v", "90", "-i", str(clip(d)), "-c", "copy", str(path := d / "rotated.mp4"))
        return path
    if name == "variable_frame_rate":
        # Frames dropped irregularly and timestamps kept: the gaps between frames vary.
        ffmpeg("-f", "lavfi", "-i", "testsrc2=size=360x640:rate=30:duration=1.5", "-f", "lavfi", "-i",
               "sine=duration=1.5", "-vf", "select='not(mod(n\\,3))+lt(n\\,8)+between(n\\,20\\,27)'",
               "-fps_mode", "vfr", "-c:v", "libx264", "-preset", "ultrafast", "-c:a", "aac", "-shortest",
               str(path := d / "vfr.mp4"))
        return path
    if name == "ten_bit":
        ffmpeg("-f", "lavfi", "-i", "testsrc2=size=360x640:rate=25:duration=1", "-f", "lavfi", "-i",
               "sine=duration=1", "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p10le",
               "-c:a", "aac", "-shortest", str(path := d / "10bit.mp4"))
        return path
    raise ValueError(name)
