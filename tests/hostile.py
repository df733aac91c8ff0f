"""A corpus of hostile and unusual inputs, made on the spot with FFmpeg's lavfi sources and Python."""

from __future__ import annotations

import io
import os
import struct
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
    # Files that would make FFmpeg open others (here a video beside them) or the network.
    "dash_manifest": "a DASH manifest",
    "hls_playlist": "an HLS playlist",
    "ffconcat": "a concat script",
    # Named like an image sequence, beside the frames image2 would expand the name to.
    "image_sequence": "still image",
    # Headers that lie about the work inside: the limits would be judged on the lie.
    "size_lie": "the header says 320×240, but picture",
    "length_lie": "the header says 1 s, but its frames run",
}
# Each is unusual but valid: copies are made.
UNUSUAL = ("no_audio", "rotated", "variable_frame_rate", "ten_bit")


def ffmpeg(*args: str) -> None:
    cmd = [ffmpeg_binary(), "-hide_banner", "-nostdin", "-loglevel", "error", "-y", *args]
    subprocess.run(cmd, check=True, capture_output=True, timeout=120)


def clip(d: Path) -> Path:
    path = d / "clip.mp4"
    return path if path.exists() else make_clip(path, seconds=1, width=360, height=640)


def manifest(kind: str, url: str) -> str:
    """A playlist of `kind` ("hls", "ffconcat" or "dash") whose one segment is `url`."""
    if kind == "hls":
        return (f"#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:2\n#EXT-X-MEDIA-SEQUENCE:0\n"
                f"#EXTINF:2.0,\n{url}\n#EXT-X-ENDLIST\n")
    if kind == "ffconcat":
        return f"ffconcat version 1.0\nfile '{url}'\n"
    if kind == "dash":
        return ('<?xml version="1.0"?>\n<MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static" '
                'mediaPresentationDuration="PT2S" minBufferTime="PT1S" '
                'profiles="urn:mpeg:dash:profile:isoff-on-demand:2011"><Period><AdaptationSet mimeType="video/mp4">'
                f'<Representation id="1" bandwidth="100000" width="360" height="640"><BaseURL>{url}</BaseURL>'
                "<SegmentBase/></Representation></AdaptationSet></Period></MPD>\n")
    raise ValueError(kind)


_BOXES_WITHIN = {b"moov", b"trak", b"mdia", b"minf", b"stbl"}


def _boxes(data: bytes | bytearray, start: int = 0, end: int | None = None):
    """(type, offset, size) of every MP4 box, depth first, through the boxes that hold a track's header."""
    end = len(data) if end is None else end
    while start + 8 <= end:
        size, kind = struct.unpack(">I4s", data[start:start + 8])
        if size < 8:
            return
        yield kind, start, size
        if kind in _BOXES_WITHIN:
            yield from _boxes(data, start + 8, start + size)
        start += size


def _claim_one_second(mp4: Path, path: Path) -> Path:
    """`mp4` with its movie, track and media headers saying it lasts one second (version 0 boxes)."""
    data = bytearray(mp4.read_bytes())
    movie_scale = 0
    for kind, at, _size in _boxes(data):
        if kind in (b"mvhd", b"mdhd"):
            scale = struct.unpack(">I", data[at + 20:at + 24])[0]
            movie_scale = scale if kind == b"mvhd" else movie_scale
            data[at + 24:at + 28] = struct.pack(">I", scale)
        elif kind == b"tkhd":
            data[at + 28:at + 32] = struct.pack(">I", movie_scale)
    path.write_bytes(bytes(data))
    return path


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
    elif name in ("dash_manifest", "hls_playlist", "ffconcat"):
        kind = {"dash_manifest": "dash", "hls_playlist": "hls", "ffconcat": "ffconcat"}[name]
        (path := d / f"{kind}.mp4").write_text(manifest(kind, f"file:{clip(d)}"))
    elif name == "image_sequence":
        for n in range(1, 31):
            ffmpeg("-f", "lavfi", "-i", f"color=c=0x{n * 8:02x}8040:s=360x640", "-frames:v", "1", "-c:v", "png",
                   "-f", "image2", "-update", "1", str(d / f"frame{n:03d}.mp4"))
        (path := d / "frame%03d.mp4").write_bytes((d / "frame001.mp4").read_bytes())
    elif name == "size_lie":
        # The header (the first parameter sets) says 320x240; from the second second on, the
        # pictures are 8000x8000, announced only inside the stream.
        parts = []
        for size, seconds in (("320x240", 1), ("8000x8000", 0.08)):
            part = d / f"part-{size}.h264"
            ffmpeg("-f", "lavfi", "-i", f"testsrc2=s={size}:r=25:d={seconds}", "-c:v", "libx264", "-preset",
                   "ultrafast", "-f", "h264", str(part))
            parts.append(part.read_bytes())
            part.unlink()
        (stream := d / "lie.h264").write_bytes(b"".join(parts))
        ffmpeg("-r", "25", "-i", str(stream), "-c", "copy", "-f", "mp4", str(path := d / "size_lie.mp4"))
        stream.unlink()
    elif name == "length_lie":
        # Two hours of frames, with every header saying the video lasts one second.
        ffmpeg("-f", "lavfi", "-i", "color=c=gray:s=64x64:r=1:d=7200", "-c:v", "libx264", "-preset", "ultrafast",
               "-f", "mp4", str(honest := d / "two_hours.mp4"))
        path = _claim_one_second(honest, d / "length_lie.mp4")
        honest.unlink()
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
