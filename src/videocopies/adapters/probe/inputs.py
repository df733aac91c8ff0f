"""What FFmpeg and PyAV may open on our behalf: the one local file they are given, through a
known video demuxer. One definition for the prober (PyAV) and every FFmpeg child.

Playlists and manifests (hls, dash, concat/ffconcat, sdp, ...) open other files or the
network, image2 expands a name like `frame%03d.mp4` into a sequence of other files, and
protocols such as http, subfile, data or crypto read what the file names: none is allowed."""

from __future__ import annotations

from pathlib import Path

PROTOCOLS = "file"
VIDEO_DEMUXERS = (
    "mov,mp4,m4a,3gp,3g2,mj2", "matroska,webm", "avi", "flv", "mpegts", "mpeg", "asf", "ogg", "nut", "mxf", "dv",
    "ivf", "obu", "h264", "hevc", "m4v", "mpegvideo", "gif", "yuv4mpegpipe",
)
MOV = VIDEO_DEMUXERS[0]
# The mov demuxer's external data references ("drefs") would open files the movie names;
# they are off by default and stay off whatever a build's default becomes.
MOV_NO_REFERENCES = {"enable_drefs": "0", "use_absolute_path": "0"}


def ffmpeg_input(path: Path, demuxer: str = "", max_pixels: int | None = None) -> list[str]:
    """FFmpeg's input options and `-i` for one local file. `demuxer` is the name the probe found
    (e.g. "mov,mp4,m4a,3gp,3g2,mj2"): FFmpeg is then held to it. `max_pixels` makes the decoder
    refuse any picture larger than that, such as one bigger than the header said."""
    args = ["-protocol_whitelist", PROTOCOLS, "-format_whitelist", ",".join(VIDEO_DEMUXERS)]
    if demuxer in VIDEO_DEMUXERS:
        args += ["-f", demuxer.split(",")[0]]
        # Options of the mov demuxer only: FFmpeg refuses options no demuxer takes.
        if demuxer == MOV:
            for name, value in MOV_NO_REFERENCES.items():
                args += [f"-{name}", value]
    if max_pixels is not None:
        args += ["-max_pixels", str(max_pixels)]
    # "file:" keeps a name with a colon from being read as another protocol's address.
    return [*args, "-i", f"file:{path}"]
